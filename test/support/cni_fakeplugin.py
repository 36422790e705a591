"""A CNI plugin executable for tests: it records each call and answers as its config says.

`PluginDir.install(name)` writes this file as an executable `name` into a temporary CNI_PATH directory.

Config keys it reads: `log` (a file to append one JSON line per call: command, CNI_* env, stdin),
`ifname_result` (ADD answers a result with the CNI_IFNAME interface in the netns and `address`),
`fail` (a command name: that command prints a CNI error and exits 1).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


class PluginDir:
    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "calls.jsonl"

    def install(self, *names: str) -> None:
        for name in names:
            path = self.bin / name
            path.write_text(f"#!{sys.executable}\n" + Path(__file__).read_text())
            path.chmod(0o755)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def main() -> int:
    conf = json.loads(sys.stdin.read())
    command = os.environ["CNI_COMMAND"]
    env = {k: v for k, v in os.environ.items() if k.startswith("CNI_")}
    with open(conf["log"], "a") as log:
        log.write(json.dumps({"command": command, "env": env, "stdin": conf}) + "\n")
    if conf.get("fail") == command:
        print(json.dumps({"cniVersion": conf.get("cniVersion", ""), "code": 7,
                          "msg": f"{conf['type']} refuses", "details": "as configured"}))
        return 1
    if command != "ADD":
        return 0
    prev = conf.get("prevResult") or {"cniVersion": conf.get("cniVersion", ""), "interfaces": [], "ips": []}
    result = dict(prev)
    result["interfaces"] = [*prev.get("interfaces", []),
                            {"name": env["CNI_IFNAME"], "mac": conf.get("mac", "02:00:00:00:00:01"),
                             "sandbox": env["CNI_NETNS"]}]
    if conf.get("address"):
        result["ips"] = [*prev.get("ips", []),
                         {"address": conf["address"], "interface": len(result["interfaces"]) - 1}]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
