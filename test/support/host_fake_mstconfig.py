#!/usr/bin/env python3
"""A fake `mstconfig` for tests: firmware state in $FAKE_MST_STATE (JSON {pci: {key: int or text}}), every
invocation appended to $FAKE_MST_LOG. Output mimics `mstconfig -d <pci> q`. Installed as `mstfwreset` it
only logs (prefixed "mstfwreset"), and fails for the devices listed in $FAKE_MSTFWRESET_FAIL."""

import json
import os
import sys

state_path = os.environ["FAKE_MST_STATE"]
tool = os.path.basename(sys.argv[0])
with open(os.environ["FAKE_MST_LOG"], "a") as log:
    log.write(json.dumps(([tool] if tool == "mstfwreset" else []) + sys.argv[1:]) + "\n")
if tool == "mstfwreset":
    if sys.argv[2] in os.environ.get("FAKE_MSTFWRESET_FAIL", "").split(","):
        sys.stderr.write("-E- Failed to reset the device\n")
        sys.exit(1)
    print("-I- Resetting the device... Done")
    sys.exit(0)
with open(state_path) as f:
    state = json.load(f)
args = sys.argv[1:]
yes = "-y" in args
args = [a for a in args if a != "-y"]
if len(args) < 3 or args[0] != "-d":
    sys.stderr.write("usage: mstconfig [-y] -d <dev> q|set K=V...\n")
    sys.exit(2)
pci, cmd, rest = args[1], args[2], args[3:]
if pci not in state:
    sys.stderr.write(f"-E- Failed to open device: {pci}\n")
    sys.exit(1)
fw = state[pci]
names = {"SRIOV_EN": {0: "False(0)", 1: "True(1)"}, "LINK_TYPE_P1": {1: "IB(1)", 2: "ETH(2)"},
         "LINK_TYPE_P2": {1: "IB(1)", 2: "ETH(2)"}}
if cmd == "q":
    print(f"\nDevice #1:\n----------\n\nDevice type:    ConnectX6DX\nDevice:         {pci}\n")
    print("Configurations:                              Next Boot")
    for key, value in fw.items():
        print(f"         {key:<36}{names.get(key, {}).get(value, value)}")
    sys.exit(0)
if cmd == "set":
    if not yes:
        sys.stderr.write("Apply new Configuration? (y/n) [n] : aborted\n")
        sys.exit(1)
    for kv in rest:
        key, value = kv.split("=")
        fw[key] = int(value)
    with open(state_path, "w") as f:
        json.dump(state, f)
    print("Applying... Done!\n-I- Please reboot machine to load new configurations.")
    sys.exit(0)
sys.exit(2)
