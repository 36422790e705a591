"""SriovNetworkNodePolicy validation: upstream's static and dynamic rules, with messages that name
the object, the field and the reason (upstream's wording kept inside the reason so that searches for
the upstream message still find ours)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.nicselector import interface_names, nic_selector_matches
from sriovop.api.v1.pfnames import PfNameError, validate_pf_name
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.runtime.objects import FrozenDict
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.fields import as_map, loose_int, loose_str
from sriovop.webhook.policy_spec import PolicySpec, parse_policy, parse_policy_leniently
from sriovop.webhook.selection import PfName, explain_mismatch, parse_pf_name, ranges_overlap
from sriovop.webhook.settings import WebhookSettings

_RESOURCE_NAME = re.compile(consts.RESOURCE_NAME_PATTERN)
_ENUMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "device_type": ("spec.deviceType", (consts.DEVICE_TYPE_NETDEVICE, consts.DEVICE_TYPE_VFIO_PCI)),
    "link_type": ("spec.linkType", ("", "eth", "ETH", "ib", "IB")),
    "eswitch_mode": ("spec.eSwitchMode", ("", consts.ESWITCH_MODE_LEGACY, consts.ESWITCH_MODE_SWITCHDEV)),
    "vdpa_type": ("spec.vdpaType", ("", consts.VDPA_TYPE_VIRTIO, consts.VDPA_TYPE_VHOST)),
}
#: Substrings of a node's spec.providerID that mean a virtual platform (upstream's PlatformsMap).
VIRTUAL_PLATFORMS = ("openstack", "aws")
_MAX_REASONS = 3


def validate_policy(request: AdmissionRequest, view: ClusterView, settings: WebhookSettings) -> Verdict:
    obj = request.subject
    meta = as_map(obj.get("metadata"))
    name = loose_str(meta.get("name")) or request.name
    namespace = loose_str(meta.get("namespace")) or request.namespace
    if name == consts.DEFAULT_POLICY_NAME and namespace == settings.namespace:
        return Verdict.allow()
    warnings = []
    if namespace != settings.namespace:
        warnings.append(
            f"{name} is created or updated but not used. Only policy in {settings.namespace} namespace is respected."
        )
    if request.operation == "DELETE":
        return Verdict.allow(warnings)
    try:
        policy = parse_policy(obj)
        policy = _with_identity(policy, name, namespace)
        static_checks(policy, view.supported_nics(), settings.dev_mode)
        dynamic_checks(policy, view, settings.dev_mode)
    except Denied as denied:
        return Verdict.deny(request, denied, warnings)
    return Verdict.allow(warnings)


def _with_identity(policy: PolicySpec, name: str, namespace: str) -> PolicySpec:
    if policy.name == name and policy.namespace == namespace:
        return policy
    return replace(policy, name=name, namespace=namespace)


# --- static rules ---------------------------------------------------------------------------------


def static_checks(p: PolicySpec, nics: SupportedNics, dev_mode: bool) -> None:
    _check_schema(p)
    _check_resource_name(p.resource_name)
    if p.nic.empty:
        raise Denied(
            "spec.nicSelector",
            "at least one of these parameters (vendor, deviceID, pfNames, rootDevices or netFilter) has to be "
            f"defined in nicSelector in CR {p.name}",
        )
    if p.nic.net_filter:
        _check_net_filter_exclusive(p)
    if not dev_mode:
        _check_supported_selector(p, nics)
    for i, entry in enumerate(p.nic.pf_names):
        try:
            validate_pf_name(entry, p.num_vfs)
        except PfNameError as exc:
            raise Denied(f"spec.nicSelector.pfNames[{i}]", str(exc)) from None
    if p.device_type == consts.DEVICE_TYPE_VFIO_PCI and p.is_rdma:
        raise Denied(
            "spec.isRdma",
            "'deviceType: vfio-pci' conflicts with 'isRdma: true'; Set 'deviceType' to (string)'netdevice' "
            "Or Set 'isRdma' to (bool)'false'",
        )
    if p.eswitch_mode == consts.ESWITCH_MODE_SWITCHDEV and p.link_type and p.link_type.lower() != "eth":
        raise Denied("spec.eSwitchMode", "'eSwitchMode: switchdev' can be used only with ethernet links")
    if p.vdpa_type:
        if p.device_type != consts.DEVICE_TYPE_NETDEVICE:
            raise Denied(
                "spec.vdpaType",
                f"'deviceType: {p.device_type}' conflicts with '{p.vdpa_type}'; Set 'deviceType' to "
                "(string)'netdevice' Or Remove 'vdpaType'",
            )
        if p.eswitch_mode != consts.ESWITCH_MODE_SWITCHDEV:
            raise Denied("spec.vdpaType", "vdpa requires the device to be configured in switchdev mode")
    if p.has_bridge:
        if p.eswitch_mode != consts.ESWITCH_MODE_SWITCHDEV:
            raise Denied(
                "spec.bridge", "software bridge management requires the device to be configured in switchdev mode"
            )
        if p.externally_managed:
            raise Denied(
                "spec.bridge", "software bridge management can't be used when the device externally managed"
            )


def _check_schema(p: PolicySpec) -> None:
    """What the CRD schema enforces, repeated so that an object that bypassed it is still judged."""
    for attr, (path, allowed) in _ENUMS.items():
        value = getattr(p, attr)
        if value not in allowed:
            shown = ", ".join(repr(a) for a in allowed if a)
            raise Denied(path, f"unsupported value {value!r}: must be one of {shown}")
    if p.num_vfs < 0:
        raise Denied("spec.numVfs", f"numVfs({p.num_vfs}) must not be negative")
    if not consts.MIN_POLICY_PRIORITY <= p.priority <= consts.MAX_POLICY_PRIORITY:
        raise Denied(
            "spec.priority",
            f"priority {p.priority} is out of range {consts.MIN_POLICY_PRIORITY}..{consts.MAX_POLICY_PRIORITY}",
        )
    if p.mtu < 0:
        raise Denied("spec.mtu", f"mtu {p.mtu} must be at least 1")


def _check_resource_name(name: str) -> None:
    if not name:
        raise Denied("spec.resourceName", "is required and must not be empty")
    if len(name) > consts.RESOURCE_NAME_MAX_LENGTH:
        raise Denied(
            "spec.resourceName",
            f'resource name "{name}" is {len(name)} characters long; at most '
            f"{consts.RESOURCE_NAME_MAX_LENGTH} are allowed",
        )
    if not _RESOURCE_NAME.match(name):
        raise Denied(
            "spec.resourceName",
            f'resource name "{name}" contains invalid characters, the accepted syntax of the regular '
            f'expressions is: "{consts.RESOURCE_NAME_PATTERN}"',
        )


def _check_net_filter_exclusive(p: PolicySpec) -> None:
    nic = p.nic
    if nic.vendor or nic.device_id or nic.pf_names or nic.root_devices:
        raise Denied(
            "spec.nicSelector.netFilter",
            "netFilter can't be combined with vendor, deviceID, pfNames or rootDevices in the nicSelector",
        )
    if p.eswitch_mode:
        raise Denied("spec.eSwitchMode", "eSwitchMode can't be set together with nicSelector.netFilter")
    if p.has_bridge:
        raise Denied("spec.bridge", "bridge can't be set together with nicSelector.netFilter")
    if p.link_type and p.link_type.lower() != "eth":
        raise Denied("spec.linkType", f"linkType {p.link_type} can't be used with nicSelector.netFilter; only eth")


def _check_supported_selector(p: PolicySpec, nics: SupportedNics) -> None:
    vendor, device = p.nic.vendor, p.nic.device_id
    hint = " (add it to the supported-nic-ids ConfigMap, or run the webhook with DEV_MODE=TRUE)"
    if vendor:
        if not nics.is_supported_vendor(vendor):
            raise Denied("spec.nicSelector.vendor", f"vendor {vendor} is not supported{hint}")
        if device and not nics.is_supported_model(vendor, device):
            raise Denied("spec.nicSelector.deviceID", f"vendor/device {vendor}/{device} is not supported{hint}")
    elif device and not nics.is_supported_device(device):
        raise Denied("spec.nicSelector.deviceID", f"device {device} is not supported{hint}")


# --- dynamic rules --------------------------------------------------------------------------------


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return loose_str(meta.get("name")) if isinstance(meta, dict) else ""


def _interfaces(state: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if not state:
        return []
    status = state.get("status")
    ifaces = status.get("interfaces") if isinstance(status, dict) else None
    return [i for i in ifaces if isinstance(i, dict)] if isinstance(ifaces, list) else []


def interface_unselected_reason(
    p: PolicySpec, iface: Mapping[str, Any], node: Mapping[str, Any], nics: SupportedNics, dev_mode: bool,
    selector: Mapping[str, Any] | None = None, explain: bool = True,
) -> str | None:
    """None when the policy selects this NodeState interface (selector match and a supported model);
    otherwise why not (or just "" when `explain` is off: building reasons is the costly part)."""
    selector = p.nic.as_dict() if selector is None else selector
    if not nic_selector_matches(selector, iface):
        return explain_mismatch(selector, iface) if explain else ""
    vendor, device = loose_str(iface.get("vendor")), loose_str(iface.get("deviceID"))
    if dev_mode or nics.is_supported_model(vendor, device):
        return None
    spec = as_map(node.get("spec"))
    provider = loose_str(spec.get("providerID")).lower()
    if (
        any(platform in provider for platform in VIRTUAL_PLATFORMS)
        and p.nic.net_filter
        and p.nic.net_filter == loose_str(iface.get("netFilter"))
        and nics.is_vf_supported_model(vendor, device)
    ):
        return None
    return f"vendor/device {vendor}/{device} is not in the supported NIC list" if explain else ""


def _check_interface(p: PolicySpec, iface: Mapping[str, Any], node_name: str) -> None:
    where = f"interface({loose_str(iface.get('name'))}) on node {node_name}"
    vendor = loose_str(iface.get("vendor")).lower()
    if p.num_vfs == 0:
        raise Denied("spec.numVfs", f"numVfs(0) in CR {p.name} is not allowed ({where} is selected)")
    total = loose_int(iface.get("totalvfs"))
    if vendor == consts.VENDOR_INTEL and p.num_vfs > total:
        raise Denied(
            "spec.numVfs",
            f"numVfs({p.num_vfs}) in CR {p.name} exceed the maximum allowed value({total}) {where}",
        )
    if vendor == consts.VENDOR_MELLANOX and p.num_vfs > consts.MELLANOX_MAX_NUM_VFS:
        raise Denied(
            "spec.numVfs",
            f"numVfs({p.num_vfs}) in CR {p.name} exceed the maximum allowed value"
            f"({consts.MELLANOX_MAX_NUM_VFS}) {where}",
        )
    if p.externally_managed:
        current_vfs = loose_int(iface.get("numVfs"))
        if p.num_vfs > current_vfs:
            raise Denied(
                "spec.numVfs",
                f"numVfs({p.num_vfs}) in CR {p.name} is higher than the virtual functions allocated for the PF "
                f"externally value({current_vfs}) {where}",
            )
        current_mtu = loose_int(iface.get("mtu"))
        if p.mtu and p.mtu > current_mtu:
            raise Denied(
                "spec.mtu",
                f"MTU({p.mtu}) in CR {p.name} is higher than the MTU for the PF externally value({current_mtu}) "
                f"{where}",
            )
        current_link = loose_str(iface.get("linkType"))
        if p.link_type and p.link_type.lower() != current_link.lower():
            raise Denied(
                "spec.linkType",
                f"LinkType({p.link_type}) in CR {p.name} is not equal to the LinkType for the PF externally "
                f"value({current_link}) {where}",
            )
    if p.vdpa_type and vendor != consts.VENDOR_MELLANOX:
        raise Denied(
            "spec.vdpaType",
            f"vendor({iface.get('vendor')}) in CR {p.name} not supported for vdpa {where}",
        )


@dataclass(frozen=True, slots=True)
class _Peer:
    """Another policy, with its pfNames parsed once per request rather than once per node."""

    spec: PolicySpec
    pfs: tuple[tuple[str, PfName], ...]
    selector_key: tuple[tuple[str, str], ...]


def _peer(spec: PolicySpec) -> _Peer:
    pfs = []
    for entry in spec.nic.pf_names:
        try:
            pfs.append((entry, parse_pf_name(entry)))
        except PfNameError:
            continue  # judged when that policy was admitted; unparsable entries select nothing
    return _Peer(spec, tuple(pfs), tuple(sorted(spec.node_selector.items())))


#: id(stored policy) → (that object, its parsed form), for frozen objects only: a cache hands out the
#: same FrozenDict until the object changes (it is replaced, never mutated), so an identity check makes
#: a hit safe. A live view's fresh plain dicts are never kept (they would only pin memory). Bounded.
_PEER_CACHE: dict[int, tuple[object, _Peer | None]] = {}
_PEER_CACHE_MAX = 4096


def _cached_peer(obj: object) -> _Peer | None:
    hit = _PEER_CACHE.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    spec = parse_policy_leniently(obj)
    peer = _peer(spec) if spec else None
    if type(obj) is FrozenDict:
        if len(_PEER_CACHE) >= _PEER_CACHE_MAX:
            _PEER_CACHE.clear()
        _PEER_CACHE[id(obj)] = (obj, peer)
    return peer


AliasKey = tuple[tuple[str, str], ...]
#: id(NodeState) → (that object, its name aliases, their hashable key); the same identity rule as peers.
_ALIAS_CACHE: dict[int, tuple[object, dict[str, str], AliasKey]] = {}


def _aliases(interfaces: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every PF name and alternative name on a node → the PF's real name (first interface wins)."""
    out: dict[str, str] = {}
    for iface in interfaces:
        real = loose_str(iface.get("name"))
        for name in interface_names(iface):
            out.setdefault(name, real or name)
    return out


def _cached_aliases(state: object, interfaces: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], AliasKey]:
    hit = _ALIAS_CACHE.get(id(state))
    if hit is not None and hit[0] is state:
        return hit[1], hit[2]
    aliases = _aliases(interfaces)
    key = tuple(sorted(aliases.items()))
    if len(_ALIAS_CACHE) >= _PEER_CACHE_MAX:
        _ALIAS_CACHE.clear()
    if type(state) is FrozenDict:
        _ALIAS_CACHE[id(state)] = (state, aliases, key)
    return aliases, key


def _check_pf_conflicts(
    p: PolicySpec, mine: Sequence[tuple[int, str, PfName]], peer: _Peer, aliases: Mapping[str, str]
) -> None:
    """The same PF (alternative names resolved through the node's NodeState) in both policies."""
    other = peer.spec
    for i, entry, cur in mine:
        cur_name = aliases.get(cur.name, cur.name)
        for other_entry, prev in peer.pfs:
            if aliases.get(prev.name, prev.name) != cur_name:
                continue
            if p.externally_managed != other.externally_managed:
                raise Denied(
                    "spec.externallyManaged",
                    f"externallyManage is inconsistent with existing policy {other.name} on PF {cur_name}",
                )
            if ranges_overlap(cur, prev):
                raise Denied(
                    f"spec.nicSelector.pfNames[{i}]",
                    f"VF index range in {entry} is overlapped with existing policy {other.name} ({other_entry})",
                )


def _check_node_independent_conflicts(p: PolicySpec, other: PolicySpec) -> None:
    for i, root in enumerate(p.nic.root_devices):
        if root in other.nic.root_devices:
            raise Denied(
                f"spec.nicSelector.rootDevices[{i}]",
                f"root device {root} is overlapped with existing policy {other.name}",
            )
    if p.resource_name == other.resource_name and p.exclude_topology != other.exclude_topology:
        raise Denied(
            "spec.excludeTopology",
            f"excludeTopology[{str(p.exclude_topology).lower()}] field conflicts with policy "
            f"[{other.name}].ExcludeTopology[{str(other.exclude_topology).lower()}] as they target the same "
            f"resource[{p.resource_name}]",
        )


def dynamic_checks(p: PolicySpec, view: ClusterView, dev_mode: bool) -> None:
    nodes = view.nodes(p.node_selector)
    if not nodes:
        raise Denied(
            "spec.nodeSelector",
            f"no matched node is selected by the nodeSelector in CR {p.name} (selector {p.node_selector})",
        )
    states = {_name(s): s for s in view.node_states()}
    peers = [peer for peer in (_cached_peer(o) for o in view.policies()) if peer and peer.spec.name != p.name]
    groups: dict[tuple[tuple[str, str], ...], list[_Peer]] = {}
    for peer in peers:
        groups.setdefault(peer.selector_key, []).append(peer)
    mine = [(i, entry, parse_pf_name(entry)) for i, entry in enumerate(p.nic.pf_names)]
    selector = p.nic.as_dict()
    nics = view.supported_nics()
    selected = False
    reasons: list[str] = []
    # Many nodes look alike (same labels for the peers' selectors, same PF names): each distinct
    # (peer, PF naming) pair is judged once, which keeps 50 nodes x 50 policies at a few hundred checks.
    judged: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    judged_static: set[str] = set()
    judged_groups: set[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = set()
    for node in nodes:
        node_name = _name(node)
        labels = (node.get("metadata") or {}).get("labels") or {}
        state = states.get(node_name)
        interfaces = _interfaces(state)
        for iface in interfaces:
            explain = not selected and len(reasons) < _MAX_REASONS
            reason = interface_unselected_reason(p, iface, node, nics, dev_mode, selector, explain)
            if reason is None:
                selected = True
                _check_interface(p, iface, node_name)
            elif explain:
                reasons.append(f"node {node_name} interface {iface.get('name')}: {reason}")
        if not groups:
            continue
        aliases, alias_key = _cached_aliases(state, interfaces)
        for selector_key, members in groups.items():
            if (selector_key, alias_key) in judged_groups or not all(labels.get(k) == v for k, v in selector_key):
                continue
            judged_groups.add((selector_key, alias_key))
            for peer in members:
                if peer.spec.name not in judged_static:
                    _check_node_independent_conflicts(p, peer.spec)
                    judged_static.add(peer.spec.name)
                if mine and (peer.spec.name, alias_key) not in judged:
                    _check_pf_conflicts(p, mine, peer, aliases)
                    judged.add((peer.spec.name, alias_key))
    if not selected:
        detail = "; ".join(reasons) if reasons else "no selected node reports any interface in its NodeState"
        raise Denied(
            "spec.nicSelector",
            f"no supported NIC is selected by the nicSelector in CR {p.name} ({detail})",
        )
