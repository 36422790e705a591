"""Kernel modules a configuration needs, loaded before the step that needs them (as upstream does).

- `vfio_pci` before a VF is bound to vfio-pci: without it /sys/bus/pci/drivers/vfio-pci does not exist
  and the bind fails with a confusing ENOENT;
- `virtio_vdpa` / `vhost_vdpa` for groups with vdpaType virtio / vhost;
- `tun` and `vhost_net` at daemon start (upstream loads them unconditionally for policies with
  needVhostNet, which only the device plugin sees).

Loading goes through the host's own `modprobe` (its kmod matches its kernel), or the simulator. A module
that cannot be loaded is an error naming it; the apply step turns it into a failed PF.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from sriovop.host.kernelio import KernelIO
from sriovop.host.paths import HostPaths

log = structlog.get_logger("sriovop.host.modules")

VFIO_PCI = "vfio_pci"
VDPA_MODULES = {"virtio": "virtio_vdpa", "vhost": "vhost_vdpa"}
VHOST_NET_MODULES = ("tun", "vhost_net")


def modules_for_group(group: dict[str, Any]) -> list[str]:
    """The modules one VF group needs, in load order."""
    needed = []
    if (group.get("deviceType") or "netdevice") == "vfio-pci":
        needed.append(VFIO_PCI)
    vdpa = group.get("vdpaType") or ""
    if vdpa in VDPA_MODULES:
        needed.append(VDPA_MODULES[vdpa])
    return needed


def modules_for_pf(spec_iface: dict[str, Any]) -> list[str]:
    needed: list[str] = []
    for group in spec_iface.get("vfGroups") or []:
        needed += [m for m in modules_for_group(group) if m not in needed]
    return needed


class Modules:
    def __init__(self, paths: HostPaths, io: KernelIO) -> None:
        self.paths = paths
        self.io = io

    def loaded(self, name: str) -> bool:
        return self.paths.sys_module(name).is_dir()

    def load(self, name: str, *params: str) -> bool:
        """Load `name` unless it is already there; True if it was loaded now. OSError names the module."""
        if self.loaded(name):
            return False
        log.info("loading kernel module", module=name, params=params)
        try:
            self.io.modprobe(name, *params)
        except OSError as e:
            raise OSError(e.errno, f"kernel module {name} cannot be loaded: {e.strerror or e}") from e
        return True

    def load_all(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if self.load(n)]

    def try_load(self, names: Iterable[str]) -> dict[str, str]:
        """Best effort (daemon start): {module: error} for the ones that failed."""
        failed = {}
        for name in names:
            try:
                self.load(name)
            except OSError as e:
                log.warning("kernel module not loaded", module=name, error=str(e))
                failed[name] = str(e.strerror or e)
        return failed
