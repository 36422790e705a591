"""Which PFs an apply touches and why (upstream's NeedToUpdateSriov and the configure/reset split).

Pure functions over NodeState spec/status dicts, so the daemon can ask "does this need a drain?"
without touching the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sriovop.host.errors import ValidationError

DPDK_DRIVERS = frozenset({"igb_uio", "vfio-pci", "uio_pci_generic"})
NETDEVICE = "netdevice"
VFIO_PCI = "vfio-pci"


def parse_vf_range(value: str) -> tuple[int, int]:
    """`"0-7"` (or `"3"`) → (0, 7)."""
    parts = str(value).split("-")
    try:
        if len(parts) == 1:
            lo = hi = int(parts[0])
        elif len(parts) == 2:
            lo, hi = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise ValidationError(f"vfGroups[].vfRange: {value!r} is not 'a-b'") from None
    if lo < 0 or hi < lo:
        raise ValidationError(f"vfGroups[].vfRange: {value!r} must satisfy 0 <= a <= b")
    return lo, hi


def group_for(spec_iface: dict[str, Any], vf_index: int) -> dict[str, Any] | None:
    for group in spec_iface.get("vfGroups") or []:
        lo, hi = parse_vf_range(group.get("vfRange", ""))
        if lo <= vf_index <= hi:
            return dict(group)
    return None


def resulting_pf_mtu(spec_mtu: int, host_mtu: int) -> int:
    """The PF MTU after an apply: the daemon only raises it (as upstream's SetNetdevMTU caller does), so
    a spec below what the PF has leaves the PF where it is until the PF is reset."""
    return spec_mtu if spec_mtu > host_mtu else host_mtu


def update_reasons(spec: dict[str, Any], status: dict[str, Any]) -> list[str]:
    """Why the daemon reconfigures this PF (upstream's NeedToUpdateSriov), each naming the field; empty
    when it leaves the PF alone. Only the first VF that differs is named."""
    reasons: list[str] = []
    smtu, hmtu = int(spec.get("mtu") or 0), int(status.get("mtu") or 0)
    if smtu > hmtu:
        reasons.append(f"mtu: {hmtu} -> {smtu}")
    smode, hmode = spec.get("eSwitchMode") or "legacy", status.get("eSwitchMode") or "legacy"
    if smode != hmode:
        reasons.append(f"eSwitchMode: {hmode} -> {smode}")
    svfs, hvfs = int(spec.get("numVfs") or 0), int(status.get("numVfs") or 0)
    if svfs != hvfs:
        reasons.append(f"numVfs: {hvfs} -> {svfs}")
    if status.get("linkAdminState") == "down":
        reasons.append("linkAdminState: down (the daemon brings it up)")
    if reasons or svfs == 0:
        return reasons
    for vf in status.get("Vfs") or []:
        why = _vf_update_reason(spec, vf)
        if why:
            return [f"VF {vf.get('vfID')} {why}"]
    return []


def _vf_update_reason(spec: dict[str, Any], vf: dict[str, Any]) -> str:
    group = group_for(spec, int(vf["vfID"]))
    if group is None:
        return ""
    driver = vf.get("driver") or ""
    device_type = group.get("deviceType") or NETDEVICE
    if not driver:
        return "has no driver"
    if device_type == NETDEVICE:
        if driver in DPDK_DRIVERS:
            return f"deviceType: driver {driver} -> a netdevice driver"
    elif driver != device_type:
        return f"deviceType: driver {driver} -> {device_type}"
    gmtu, vmtu = int(group.get("mtu") or 0), int(vf.get("mtu") or 0)
    if device_type == NETDEVICE and gmtu and vmtu and gmtu != vmtu:
        return f"mtu: {vmtu} -> {gmtu}"
    if spec.get("externallyManaged"):
        return "externallyManaged: the daemon configures the VFs of an externally managed PF on every apply"
    if (group.get("vdpaType") or "") != (vf.get("vdpaType") or ""):
        return f"vdpaType: {vf.get('vdpaType') or '-'} -> {group.get('vdpaType') or '-'}"
    return ""


def need_to_update_sriov(spec: dict[str, Any], status: dict[str, Any]) -> bool:
    return bool(update_reasons(spec, status))


@dataclass
class Plan:
    configure: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    #: In the spec and already as wanted: only the record file is refreshed.
    unchanged: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    reset: list[dict[str, Any]] = field(default_factory=list)
    #: Spec PFs the host does not have (vanished, unsupported, wrong address).
    missing: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.configure or self.reset or self.missing)


def _int_field(where: str, value: Any, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{where}: {value!r} is not an integer >= {minimum}")
    return value


def validate_spec_interfaces(spec_interfaces: list[dict[str, Any]]) -> None:
    """Reject specs this host layer cannot apply, naming the field (it ends up in lastSyncError)."""
    seen: set[str] = set()
    for i, iface in enumerate(spec_interfaces):
        pci = iface.get("pciAddress")
        where = f"spec.interfaces[{i}]"
        if not isinstance(pci, str) or not pci:
            raise ValidationError(f"{where}.pciAddress: required")
        if pci in seen:
            raise ValidationError(f"{where}.pciAddress: {pci} appears twice")
        seen.add(pci)
        where = f"spec.interfaces[{i}] (pf {pci})"
        num_vfs = _int_field(f"{where}.numVfs", iface.get("numVfs", 0))
        _int_field(f"{where}.mtu", iface.get("mtu", 0))
        if iface.get("eSwitchMode") not in (None, "", "legacy", "switchdev"):
            raise ValidationError(f"{where}.eSwitchMode: {iface.get('eSwitchMode')!r} is not legacy or switchdev")
        for j, group in enumerate(iface.get("vfGroups") or []):
            gwhere = f"{where}.vfGroups[{j}]"
            try:
                _lo, hi = parse_vf_range(group.get("vfRange", ""))
            except ValidationError as e:
                raise ValidationError(f"{gwhere}.{str(e).removeprefix('vfGroups[].')}") from None
            if hi >= num_vfs:
                raise ValidationError(f"{gwhere}.vfRange: {group.get('vfRange')!r} reaches past numVfs {num_vfs}")
            device_type = group.get("deviceType") or NETDEVICE
            if device_type not in (NETDEVICE, VFIO_PCI):
                raise ValidationError(f"{gwhere}.deviceType: {device_type!r} is not netdevice or vfio-pci")
            vdpa = group.get("vdpaType") or ""
            if vdpa:
                if vdpa not in ("virtio", "vhost"):
                    raise ValidationError(f"{gwhere}.vdpaType: {vdpa!r} is not virtio or vhost")
                if iface.get("eSwitchMode") != "switchdev":
                    raise ValidationError(f"{gwhere}.vdpaType: vDPA needs eSwitchMode switchdev on the PF")
                if device_type != NETDEVICE:
                    raise ValidationError(f"{gwhere}.vdpaType: vDPA needs deviceType netdevice")
            _int_field(f"{gwhere}.mtu", group.get("mtu", 0))


def make_plan(spec_interfaces: list[dict[str, Any]], status_interfaces: list[dict[str, Any]]) -> Plan:
    validate_spec_interfaces(spec_interfaces)
    plan = Plan()
    by_pci = {s["pciAddress"]: s for s in status_interfaces}
    wanted = {s["pciAddress"] for s in spec_interfaces}
    for spec in spec_interfaces:
        status = by_pci.get(spec["pciAddress"])
        if status is None:
            plan.missing.append(spec)
        elif need_to_update_sriov(spec, status):
            plan.configure.append((spec, status))
        else:
            plan.unchanged.append((spec, status))
    plan.reset = [s for s in status_interfaces if s["pciAddress"] not in wanted]
    return plan


def needs_vfio(spec_interfaces: list[dict[str, Any]]) -> bool:
    return any(
        (g.get("deviceType") or NETDEVICE) == VFIO_PCI
        for s in spec_interfaces for g in (s.get("vfGroups") or [])
    )
