"""Main plugin on virtual platforms (OpenStack, AWS): each passthrough VF is listed as a PF-like entry.

No firmware, no sriov_numvfs: apply binds each device to its group's driver and sets the MTU, only
when the spec differs from the last applied one (kept in the state dir so a restart does not redo it).
Never asks for a reboot; asks for a drain when an already applied configuration changes
(`sriovop.host.decision.decide_virtual`, pure, shared with `sriovop plan`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import structlog

from sriovop.host.decision import HostFacts, decide_virtual
from sriovop.host.drivers import Drivers
from sriovop.host.errors import ApplyError
from sriovop.host.host import Host
from sriovop.host.modules import VFIO_PCI, Modules
from sriovop.host.plan import NETDEVICE
from sriovop.host.plugins.base import Decision, spec_interfaces
from sriovop.host.records import atomic_write_json

log = structlog.get_logger("sriovop.host.plugins.virtual")


class VirtualPlugin:
    name = "virtual_plugin"

    def __init__(self, host: Host) -> None:
        self.host = host
        self.drivers = Drivers(host.paths, host.io)
        self.modules = Modules(host.paths, host.io)
        self.desired: list[dict[str, Any]] | None = None

    @property
    def _last_path(self) -> Any:
        return self.host.paths.state_dir / "virtual-last-applied.json"

    def last_applied(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self._last_path.read_text())
        except (OSError, ValueError):
            return []
        return data if isinstance(data, list) else []

    def contribute_facts(self, node_state: dict[str, Any], facts: HostFacts) -> HostFacts:
        """Publishes what `decide_virtual` reads, so `sriovop plan` decides as this plugin does."""
        return replace(facts, virtual=True, virtual_last_applied=tuple(self.last_applied()))

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        result = decide_virtual(node_state.get("spec"), self.last_applied())
        spec = spec_interfaces(node_state)
        self.desired = spec if spec != self.last_applied() else None
        return Decision(drain=result.drain, reboot=False)

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        return spec_interfaces(node_state) != self.last_applied()

    def apply(self) -> None:
        if self.desired is None:
            return
        for iface in self.desired:
            pci = iface["pciAddress"]
            groups = iface.get("vfGroups") or []
            device_type = (groups[0].get("deviceType") if groups else None) or NETDEVICE
            try:
                if device_type == NETDEVICE:
                    self.drivers.bind_default(pci)
                else:
                    # As upstream: a VM usually has no vIOMMU, so vfio runs in no-IOMMU mode.
                    self.modules.load("vfio", "enable_unsafe_noiommu_mode=1")
                    self.modules.load(VFIO_PCI)
                    self.drivers.bind(pci, device_type)
            except OSError as e:
                raise ApplyError(pci, "bind-driver", str(e), errno=e.errno) from e
            mtu = int(iface.get("mtu") or 0)
            name = iface.get("name") or ""
            if mtu and name and self.host.netlink.link(name) is not None:
                try:
                    self.host.netlink.set_mtu(name, mtu)
                except OSError as e:
                    raise ApplyError(pci, "set-mtu", str(e), errno=e.errno) from e
        atomic_write_json(self._last_path, self.desired)
        self.desired = None
