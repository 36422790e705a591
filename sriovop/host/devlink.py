"""eSwitch mode through devlink, with `legacy` whenever devlink cannot answer.

Many drivers (and every simulated host) have no devlink instance; upstream treats that as legacy.
pyroute2's DL lists devlink devices but has no eswitch request, so the mode itself is read with the
iproute2 `devlink` tool, and only for devices devlink actually knows (one cheap dump per discovery).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import structlog

log = structlog.get_logger("sriovop.host.devlink")


class Devlink:
    def __init__(self) -> None:
        self._devices: set[str] | None = None

    def _known(self) -> set[str]:
        if self._devices is None:
            self._devices = set()
            try:
                from pyroute2 import DL

                dl: Any = DL()
                try:
                    for msg in dl.get_dump():
                        if msg.get_attr("DEVLINK_ATTR_BUS_NAME") == "pci":
                            self._devices.add(str(msg.get_attr("DEVLINK_ATTR_DEV_NAME")))
                finally:
                    dl.close()
            except Exception as e:  # no devlink generic-netlink family on this kernel
                log.debug("devlink unavailable", error=str(e))
        return self._devices

    def eswitch_mode(self, pci: str) -> str:
        if pci not in self._known() or shutil.which("devlink") is None:
            return "legacy"
        try:
            out = subprocess.run(
                ["devlink", "-j", "dev", "eswitch", "show", f"pci/{pci}"],
                capture_output=True, text=True, timeout=10, check=True,
            ).stdout
            mode = json.loads(out)["dev"][f"pci/{pci}"]["mode"]
        except (subprocess.SubprocessError, OSError, KeyError, ValueError):
            return "legacy"
        return "switchdev" if mode == "switchdev" else "legacy"

    def close(self) -> None:
        self._devices = None
