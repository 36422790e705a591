"""The kernel seam for switchdev work: devlink eswitch mode and params, ethtool features, vDPA devices,
udev rule reloads.

Like `KernelIO` for sysfs writes, the implementation is chosen by the caller (`KernelAccess`). On a
real host (`RealEswitchIO`) these are the iproute2 `devlink` and `vdpa` tools, `ethtool` and `udevadm`
(run inside the host root with chroot, so the host's udevd reloads the host's rules); pyroute2 has no
eswitch, ethtool-features or vDPA requests. Errors are OSError with the kernel's errno, so apply steps
report e.g. `set-eswitch-mode: ... (EOPNOTSUPP)` for a NIC without switchdev.
"""

from __future__ import annotations

import errno as errno_mod
import json
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

from sriovop.host.devlink import Devlink

TOOL_TIMEOUT = 60.0
#: Messages the tools print for the kernel's errno (they do not exit with it).
_ERRNO_TEXT = (
    ("Operation not supported", errno_mod.EOPNOTSUPP),
    ("Device or resource busy", errno_mod.EBUSY),
    ("No such device", errno_mod.ENODEV),
    ("No such file or directory", errno_mod.ENOENT),
    ("Invalid argument", errno_mod.EINVAL),
    ("File exists", errno_mod.EEXIST),
    ("Could not change any device features", errno_mod.EOPNOTSUPP),
)


class EswitchIO(Protocol):
    def eswitch_mode(self, pci: str) -> str:
        """`switchdev` or `legacy` (legacy whenever devlink cannot answer, as upstream)."""

    def set_eswitch_mode(self, pci: str, mode: str) -> None: ...

    def devlink_param(self, pci: str, name: str) -> str | None:
        """The driverinit/runtime value of a devlink param; None when the device has no such param."""

    def set_devlink_param(self, pci: str, name: str, value: str) -> None: ...

    def features(self, ifname: str) -> dict[str, bool]: ...

    def set_feature(self, ifname: str, feature: str, on: bool) -> None: ...

    def vdpa_add(self, name: str, mgmtdev: str, max_vqp: int | None) -> None: ...

    def vdpa_del(self, name: str) -> None: ...

    def reload_udev(self) -> None:
        """`udevadm control --reload-rules` and `udevadm trigger --action add --attr-match subsystem=net`."""

    def load_module(self, name: str) -> None:
        """`modprobe <name>` on the host (e.g. the vDPA bus drivers virtio_vdpa and vhost_vdpa)."""

    def close(self) -> None: ...


def _errno_of(text: str) -> int:
    for needle, code in _ERRNO_TEXT:
        if needle.lower() in text.lower():
            return code
    return errno_mod.EIO


class RealEswitchIO:
    def __init__(self, root: Path, devlink: Devlink) -> None:
        self.root = Path(root)
        self.devlink = devlink

    def _run(self, argv: list[str], *, host: bool = False) -> str:
        if host and self.root != Path("/"):
            argv = ["chroot", str(self.root), *argv]
        elif shutil.which(argv[0]) is None:
            raise OSError(errno_mod.ENOENT, f"{argv[0]} is not installed (needed for {' '.join(argv[1:3])})")
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as e:
            raise TimeoutError(errno_mod.ETIMEDOUT, f"{' '.join(argv)} did not finish in {TOOL_TIMEOUT:g}s") from e
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip()
            raise OSError(_errno_of(text), f"{' '.join(argv)}: {text or f'exit {proc.returncode}'}")
        return proc.stdout

    def eswitch_mode(self, pci: str) -> str:
        return self.devlink.eswitch_mode(pci)

    def set_eswitch_mode(self, pci: str, mode: str) -> None:
        self._run(["devlink", "dev", "eswitch", "set", f"pci/{pci}", "mode", mode])
        self.devlink.close()  # the cached device list may be stale after a mode change

    def devlink_param(self, pci: str, name: str) -> str | None:
        try:
            out = self._run(["devlink", "-j", "dev", "param", "show", f"pci/{pci}", "name", name])
        except OSError as e:
            if e.errno in (errno_mod.EINVAL, errno_mod.ENODEV, errno_mod.EOPNOTSUPP, errno_mod.ENOENT):
                return None
            raise
        try:
            params = json.loads(out)["param"][f"pci/{pci}"]
            values = params[0]["values"]
            return str(values[0]["value"])
        except (KeyError, IndexError, ValueError, TypeError):
            return None

    def set_devlink_param(self, pci: str, name: str, value: str) -> None:
        self._run(["devlink", "dev", "param", "set", f"pci/{pci}", "name", name, "value", value,
                   "cmode", "runtime"])

    def features(self, ifname: str) -> dict[str, bool]:
        out = self._run(["ethtool", "-k", ifname])
        result = {}
        for line in out.splitlines()[1:]:
            key, _, value = line.strip().partition(":")
            if value:
                result[key.strip()] = value.strip().startswith("on")
        return result

    def set_feature(self, ifname: str, feature: str, on: bool) -> None:
        self._run(["ethtool", "-K", ifname, feature, "on" if on else "off"])

    def vdpa_add(self, name: str, mgmtdev: str, max_vqp: int | None) -> None:
        argv = ["vdpa", "dev", "add", "name", name, "mgmtdev", mgmtdev]
        if max_vqp is not None:
            argv += ["max_vqp", str(max_vqp)]
        self._run(argv)

    def vdpa_del(self, name: str) -> None:
        self._run(["vdpa", "dev", "del", name])

    def reload_udev(self) -> None:
        self._run(["udevadm", "control", "--reload-rules"], host=True)
        self._run(["udevadm", "trigger", "--action", "add", "--attr-match", "subsystem=net"], host=True)

    def load_module(self, name: str) -> None:
        self._run(["modprobe", name], host=True)

    def close(self) -> None:
        self.devlink.close()
