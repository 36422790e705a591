"""Runs INSIDE the e2e guest (as root, chrooted into the host root): plain sysfs/iproute2 SR-IOV steps.

Stand-in for the config daemon until it exists: it performs the steps the daemon will perform on the
emulated 82576 and prints one line `SRIOVOP-RESULT <json>` that the host-side tests assert on. It never
asserts itself, so one boot yields evidence for every check, including the operations that fail.

Usage (in the guest): python3 vm_sysfs_checks.py NUM_VFS
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PCI = Path("/sys/bus/pci/devices")
PF_ID = ("0x8086", "0x10c9")


def read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as e:
        return f"<error {e.errno}>"


def write(path: Path, value: str) -> dict[str, Any]:
    """A sysfs write with the exact errno (Python's buffered writes would hide where it failed)."""
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
        return {"ok": True, "errno": 0, "error": "", "seconds": time.monotonic() - t0}
    except OSError as e:
        return {"ok": False, "errno": e.errno, "errname": errno.errorcode.get(e.errno or 0, "?"),
                "error": e.strerror, "seconds": time.monotonic() - t0}
    finally:
        os.close(fd)


def sh(*argv: str) -> dict[str, Any]:
    p = subprocess.run(argv, capture_output=True, text=True, check=False)
    return {"cmd": " ".join(argv), "rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr.strip()}


def device(dev: Path) -> dict[str, Any]:
    drv = dev / "driver"
    net = dev / "net"
    return {
        "bdf": dev.name,
        "vendor": read(dev / "vendor"),
        "device": read(dev / "device"),
        "driver": os.path.basename(os.readlink(drv)) if drv.exists() else None,
        "netdevs": sorted(p.name for p in net.iterdir()) if net.is_dir() else [],
    }


def vfs_of(pf: Path) -> list[dict[str, Any]]:
    links = sorted(pf.glob("virtfn*"), key=lambda p: int(p.name[len("virtfn"):]))
    return [dict(device(link.resolve()), index=int(link.name[len("virtfn"):])) for link in links]


def wait_vfs_bound(pf: Path, n: int, timeout: float = 60) -> tuple[list[dict[str, Any]], float]:
    """VFs appear and bind asynchronously after the sriov_numvfs write returns; wait for netdevs too."""
    t0 = time.monotonic()
    while True:
        vfs = vfs_of(pf)
        if len(vfs) == n and all(v["driver"] and v["netdevs"] for v in vfs):
            return vfs, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return vfs, time.monotonic() - t0
        time.sleep(0.05)


def wait_carrier(ifname: str, timeout: float = 20) -> tuple[str, float]:
    t0 = time.monotonic()
    while True:
        carrier = read(Path("/sys/class/net") / ifname / "carrier")
        if carrier == "1" or time.monotonic() - t0 > timeout:
            return carrier, time.monotonic() - t0
        time.sleep(0.1)


def main() -> int:
    num_vfs = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    out: dict[str, Any] = {"kernel": os.uname().release, "pfs": [], "steps": {}}
    pfs = [d for d in sorted(PCI.iterdir()) if (read(d / "vendor"), read(d / "device")) == PF_ID]
    for d in pfs:
        out["pfs"].append(dict(device(d), totalvfs=read(d / "sriov_totalvfs"), numvfs=read(d / "sriov_numvfs")))
    if not pfs:
        print("SRIOVOP-RESULT " + json.dumps(out), flush=True)
        return 1
    pf = pfs[0]
    ifname = device(pf)["netdevs"][0]
    steps = out["steps"]

    steps["mtu_9000"] = sh("ip", "link", "set", ifname, "mtu", "9000")
    steps["mtu_after"] = read(Path("/sys/class/net") / ifname / "mtu")

    t0 = time.monotonic()
    steps["create"] = write(pf / "sriov_numvfs", str(num_vfs))
    vfs, bind_wait = wait_vfs_bound(pf, num_vfs)
    steps["create"].update(vfs=vfs, bind_wait_seconds=bind_wait, total_seconds=time.monotonic() - t0,
                           numvfs=read(pf / "sriov_numvfs"))

    macs = {i: f"02:00:00:00:00:{0x10 + i:02x}" for i in range(num_vfs)}
    steps["vf_mac"] = [sh("ip", "link", "set", ifname, "vf", str(i), "mac", mac) for i, mac in macs.items()]
    steps["vf_vlan"] = sh("ip", "link", "set", ifname, "vf", "1", "vlan", "100")
    steps["vf_trust"] = sh("ip", "link", "set", ifname, "vf", "1", "trust", "on")
    steps["vf_spoofchk"] = sh("ip", "link", "set", ifname, "vf", "1", "spoofchk", "off")
    steps["vf_link_state"] = sh("ip", "link", "set", ifname, "vf", "0", "state", "enable")
    # igb_ndo_set_vf_bw refuses rates while the PF has no link (STATUS.LU), above the link speed, and
    # any min_tx_rate; with the link up a max rate is accepted.
    steps["vf_max_tx_rate_link_down"] = sh("ip", "link", "set", ifname, "vf", "0", "max_tx_rate", "100")
    steps["pf_up"] = sh("ip", "link", "set", ifname, "up")
    steps["pf_carrier"], steps["pf_carrier_wait_seconds"] = wait_carrier(ifname)
    steps["pf_speed"] = read(Path("/sys/class/net") / ifname / "speed")
    steps["vf_max_tx_rate"] = sh("ip", "link", "set", ifname, "vf", "0", "max_tx_rate", "100")
    steps["vf_max_tx_rate_above_link"] = sh("ip", "link", "set", ifname, "vf", "2", "max_tx_rate", "2000")
    steps["vf_min_tx_rate"] = sh("ip", "link", "set", ifname, "vf", "3", "min_tx_rate", "10")
    steps["ip_link_show"] = sh("ip", "link", "show", ifname)
    steps["ip_link_show_json"] = sh("ip", "-j", "link", "show", ifname)

    steps["too_many_while_enabled"] = write(pf / "sriov_numvfs", "8")
    steps["too_many_while_enabled"]["numvfs"] = read(pf / "sriov_numvfs")

    steps["reset"] = write(pf / "sriov_numvfs", "0")
    vfs, wait = wait_vfs_bound(pf, 0)
    steps["reset"].update(vfs=vfs, numvfs=read(pf / "sriov_numvfs"), wait_seconds=wait)

    steps["too_many"] = write(pf / "sriov_numvfs", "8")
    steps["too_many"]["numvfs"] = read(pf / "sriov_numvfs")
    steps["modprobe_vfio_pci"] = sh("modprobe", "vfio-pci")
    steps["vfio_pci_loaded"] = Path("/sys/module/vfio_pci").is_dir()
    steps["dmesg_tail"] = sh("dmesg")["stdout"].splitlines()[-40:]

    print("SRIOVOP-RESULT " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
