"""A SriovNetworkNodePolicy's spec read into typed fields, every type error a denial naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sriovop.api.v1 import consts
from sriovop.policyrules.denied import Denied
from sriovop.policyrules.fields import get_bool, get_int, get_map, get_str, get_str_list, get_str_map


@dataclass(frozen=True, slots=True)
class NicSelector:
    vendor: str = ""
    device_id: str = ""
    root_devices: tuple[str, ...] = ()
    pf_names: tuple[str, ...] = ()
    net_filter: str = ""

    @property
    def empty(self) -> bool:
        return not (self.vendor or self.device_id or self.root_devices or self.pf_names or self.net_filter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor, "deviceID": self.device_id, "rootDevices": list(self.root_devices),
            "pfNames": list(self.pf_names), "netFilter": self.net_filter,
        }


@dataclass(frozen=True, slots=True)
class PolicySpec:
    name: str
    namespace: str
    resource_name: str
    node_selector: dict[str, str]
    num_vfs: int
    nic: NicSelector
    priority: int = consts.DEFAULT_POLICY_PRIORITY
    mtu: int = 0
    device_type: str = consts.DEVICE_TYPE_NETDEVICE
    is_rdma: bool = False
    link_type: str = ""
    eswitch_mode: str = ""
    vdpa_type: str = ""
    exclude_topology: bool = False
    externally_managed: bool = False
    has_bridge: bool = False


def parse_policy(obj: dict[str, Any]) -> PolicySpec:
    meta = get_map(obj, "metadata", "metadata")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise Denied("spec", "is required and must be an object")
    nic = get_map(spec, "nicSelector", "spec.nicSelector")
    bridge = get_map(spec, "bridge", "spec.bridge")
    ovs = bridge.get("ovs")
    if ovs is not None and not isinstance(ovs, dict):
        raise Denied("spec.bridge.ovs", f"must be an object, got {type(ovs).__name__}")
    return PolicySpec(
        name=get_str(meta, "name", "metadata.name"),
        namespace=get_str(meta, "namespace", "metadata.namespace"),
        resource_name=get_str(spec, "resourceName", "spec.resourceName"),
        node_selector=get_str_map(spec, "nodeSelector", "spec.nodeSelector"),
        num_vfs=get_int(spec, "numVfs", "spec.numVfs"),
        nic=NicSelector(
            vendor=get_str(nic, "vendor", "spec.nicSelector.vendor"),
            device_id=get_str(nic, "deviceID", "spec.nicSelector.deviceID"),
            root_devices=tuple(get_str_list(nic, "rootDevices", "spec.nicSelector.rootDevices")),
            pf_names=tuple(get_str_list(nic, "pfNames", "spec.nicSelector.pfNames")),
            net_filter=get_str(nic, "netFilter", "spec.nicSelector.netFilter"),
        ),
        priority=get_int(spec, "priority", "spec.priority", consts.DEFAULT_POLICY_PRIORITY),
        mtu=get_int(spec, "mtu", "spec.mtu"),
        device_type=get_str(spec, "deviceType", "spec.deviceType", consts.DEVICE_TYPE_NETDEVICE),
        is_rdma=get_bool(spec, "isRdma", "spec.isRdma"),
        link_type=get_str(spec, "linkType", "spec.linkType"),
        eswitch_mode=get_str(spec, "eSwitchMode", "spec.eSwitchMode"),
        vdpa_type=get_str(spec, "vdpaType", "spec.vdpaType"),
        exclude_topology=get_bool(spec, "excludeTopology", "spec.excludeTopology"),
        externally_managed=get_bool(spec, "externallyManaged", "spec.externallyManaged"),
        has_bridge=ovs is not None,
    )


def parse_policy_leniently(obj: Any) -> PolicySpec | None:
    """Another stored policy, as a peer to compare against: one we cannot read is no conflict."""
    if not isinstance(obj, dict):
        return None
    try:
        return parse_policy(obj)
    except Denied:
        return None
