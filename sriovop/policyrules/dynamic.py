"""SriovNetworkNodePolicy dynamic rules: judged against the live cluster (Nodes, NodeStates, policies)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.nicselector import nic_selector_matches
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.policyrules.denied import Denied
from sriovop.policyrules.fields import as_map, loose_int, loose_str
from sriovop.policyrules.identity_memo import IdentityMemo
from sriovop.policyrules.node_classes import NodeClassMemo
from sriovop.policyrules.peers import (
    NODE_MEMO_LIMIT,
    AliasKey,
    Peer,
    cached_aliases,
    cached_peer,
    cached_shape,
    check_node_independent_conflicts,
    check_pf_conflicts,
)
from sriovop.policyrules.pfselection import explain_mismatch, parse_pf_name
from sriovop.policyrules.spec import PolicySpec
from sriovop.policyrules.view import ClusterView

#: Substrings of a node's spec.providerID that mean a virtual platform (upstream's PlatformsMap).
VIRTUAL_PLATFORMS = ("openstack", "aws")
#: Nodes whose rejected PFs are listed in a "no supported NIC" denial; beyond that, a count.
_MAX_EXPLAINED_NODES = 5


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return loose_str(meta.get("name")) if isinstance(meta, dict) else ""


def _read_interfaces(state: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if not state:
        return []
    status = state.get("status")
    ifaces = status.get("interfaces") if isinstance(status, dict) else None
    return [i for i in ifaces if isinstance(i, dict)] if isinstance(ifaces, list) else []


#: NodeState → its interfaces (IdentityMemo). A validation reads every selected node's interfaces;
#: rebuilding the list each time was a fifth of its CPU.
_INTERFACES_CACHE: IdentityMemo[list[dict[str, Any]]] = IdentityMemo(NODE_MEMO_LIMIT)


def _interfaces(state: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The NodeState's PFs (callers only read the list)."""
    return _INTERFACES_CACHE.get(state, lambda: _read_interfaces(state))


def _virtual(node: Mapping[str, Any]) -> bool:
    """Whether the node runs on a virtual platform: all that the checks read from its providerID."""
    provider = loose_str(as_map(node.get("spec")).get("providerID")).lower()
    return any(platform in provider for platform in VIRTUAL_PLATFORMS)


#: Node → its name, labels and virtual platform (IdentityMemo), so a request reads each cached Node's
#: fields once.
_NODE_CACHE: IdentityMemo[tuple[str, Mapping[str, Any], bool]] = IdentityMemo(NODE_MEMO_LIMIT)


def _node_facts(node: Mapping[str, Any]) -> tuple[str, Mapping[str, Any], bool]:
    return _NODE_CACHE.get(node, lambda: (_name(node), (node.get("metadata") or {}).get("labels") or {},
                                          _virtual(node)))


def interface_unselected_reason(
    p: PolicySpec, iface: Mapping[str, Any], node: Mapping[str, Any], nics: SupportedNics, dev_mode: bool,
    selector: Mapping[str, Any] | None = None, explain: bool = True,
) -> str | None:
    """None when the policy selects this NodeState interface (selector match and a supported model);
    otherwise why not (or just "" when `explain` is off: building reasons is the costly part).

    `selector` defaults to the whole nicSelector, netFilter included (what the policy controller
    selects). The webhook passes `webhook_selector(...)` instead: upstream's webhook (validateNicModel)
    leaves netFilter out of its match, so a netFilter-only policy selects every supported PF of the
    selected nodes, and an empty `selector` matches every interface.
    """
    selector = p.nic.as_dict() if selector is None else selector
    if selector and not nic_selector_matches(selector, iface):
        return explain_mismatch(selector, iface) if explain else ""
    vendor, device = loose_str(iface.get("vendor")), loose_str(iface.get("deviceID"))
    if dev_mode or nics.is_supported_model(vendor, device):
        return None
    if (
        _virtual(node)
        and p.nic.net_filter
        and p.nic.net_filter == loose_str(iface.get("netFilter"))
        and nics.is_vf_supported_model(vendor, device)
    ):
        return None
    return f"vendor/device {vendor}/{device} is not in the supported NIC list" if explain else ""


def webhook_selector(selector: Mapping[str, Any]) -> dict[str, Any]:
    """The selector fields upstream's webhook matches on (all set fields but netFilter)."""
    return {k: v for k, v in selector.items() if k != "netFilter" and v}


def check_interface(p: PolicySpec, iface: Mapping[str, Any], node_name: str) -> None:
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


#: Peer policies grouped by their nodeSelector (as `Peer.selector_key`: sorted (label, value) pairs).
_SelectorKey = tuple[tuple[str, str], ...]


def dynamic_checks(p: PolicySpec, view: ClusterView, dev_mode: bool) -> None:
    """Judge `p` against the live cluster: it must select a node, select a supported NIC there (within
    that NIC's limits), and not conflict with another policy over a node's PFs. Denied on the first
    failure; the work is memoised so that a cluster of many alike nodes costs about as much as one."""
    view.fresh()
    nodes = view.nodes(p.node_selector)
    if not nodes:
        raise Denied(
            "spec.nodeSelector",
            f"no matched node is selected by the nodeSelector in CR {p.name} (selector {p.node_selector})",
        )
    version = view.version()
    stored = _stored_policies(view, version)
    judge = _DynamicJudge(p, view, dev_mode, _peer_groups(p, stored))
    walk = nodes if version is None else _CLASSES.representatives(nodes, version,
                                                                   _class_of(judge.states, stored.keys))
    for node in walk:
        judge.judge_node(node)
    if walk is not nodes and not judge.selected:
        # The denial lists the rejected nodes one by one: walk them all (see node_classes.py).
        judge = _DynamicJudge(p, view, dev_mode, judge.groups)
        for node in nodes:
            judge.judge_node(node)
    judge.deny_unless_selected()


#: Selected nodes -> one node per class the rules cannot tell apart (node_classes.py).
_CLASSES = NodeClassMemo()


def _class_of(states: Mapping[str, Any], keys: Sequence[str]) -> Callable[[Mapping[str, Any]], Hashable]:
    """A node's class: everything the dynamic checks read from it but its name (its interfaces' shape,
    its platform, its values of `keys`, the label keys any stored policy selects on)."""

    def class_of(node: Mapping[str, Any]) -> Hashable:
        name, labels, virtual = _node_facts(node)
        state = states.get(name)
        return cached_shape(state, _interfaces(state)), virtual, tuple(map(labels.get, keys))

    return class_of


_Groups = dict[_SelectorKey, list[Peer]]


@dataclass(frozen=True)
class _StoredPolicies:
    """Every stored policy grouped by nodeSelector, their names, and the label keys they select on."""

    groups: _Groups
    names: frozenset[str]
    keys: tuple[str, ...]


#: (view version, its stored policies): one grouping per version, replaced whole (one assignment), so a
#: concurrent request reads the old or the new one.
_kept_stored: tuple[Hashable, _StoredPolicies] | None = None


def _stored_policies(view: ClusterView, version: Hashable) -> _StoredPolicies:
    """The view's stored policies, grouped; kept while `version` (read before the policies) holds."""
    global _kept_stored
    kept = _kept_stored
    if version is not None and kept is not None and kept[0] == version:
        return kept[1]
    groups: _Groups = {}
    for obj in view.policies():
        peer = cached_peer(obj)
        if peer:
            groups.setdefault(peer.selector_key, []).append(peer)
    stored = _StoredPolicies(groups, frozenset(peer.spec.name for members in groups.values() for peer in members),
                             tuple(sorted({k for key in groups for k, _ in key})))
    if version is not None:
        _kept_stored = (version, stored)
    return stored


def _peer_groups(p: PolicySpec, stored: _StoredPolicies) -> _Groups:
    """The other policies, grouped by nodeSelector: a group selects a node or not as a whole. `p`'s own
    stored copy is left out."""
    if p.name not in stored.names:
        return stored.groups
    others = {key: [peer for peer in members if peer.spec.name != p.name] for key, members in stored.groups.items()}
    return {key: members for key, members in others.items() if members}


class _DynamicJudge:
    """One request's walk over the selected nodes, with the five memos that let alike nodes pass at the
    cost of a lookup (each named after the check it spares):

    - `judged_shapes`: interface lists of this shape (PF names and models) on this kind of platform were
      judged for selection and limits already;
    - `groups_for`: which peer groups select a node with these label values;
    - `judged_node_kinds`: a node with the same peer groups and the same PF names was checked for conflicts;
    - `judged_groups`: this peer group was checked against this PF naming;
    - `judged_static` / `judged_pfs`: this peer was checked for node-independent conflicts, and for PF
      conflicts under this PF naming.
    """

    def __init__(self, p: PolicySpec, view: ClusterView, dev_mode: bool, groups: _Groups) -> None:
        self.p = p
        self.dev_mode = dev_mode
        self.states = view.node_states_by_name()
        self.nics = view.supported_nics()
        self.selector = webhook_selector(p.nic.as_dict())
        self.mine = [(i, entry, parse_pf_name(entry)) for i, entry in enumerate(p.nic.pf_names)]
        self.groups = groups
        # Which peer groups select a node depends only on the node's values for the keys the peers'
        # selectors use: nodes are bucketed by that projection and each bucket is matched against the
        # groups once, so the cost is (distinct projections x groups) + (nodes x groups that select
        # them), not nodes x P.
        self.peer_keys = sorted({k for key in self.groups for k, _ in key})
        self.groups_for: dict[tuple[str | None, ...], list[tuple[_SelectorKey, list[Peer]]]] = {}
        self.selected = False
        self.reasons: list[str] = []
        self.unexplained = 0
        self.judged_shapes: set[tuple[str, bool]] = set()
        self.judged_node_kinds: set[tuple[tuple[str | None, ...], str]] = set()
        self.judged_groups: set[tuple[_SelectorKey, AliasKey]] = set()
        self.judged_static: set[str] = set()
        self.judged_pfs: set[tuple[str, AliasKey]] = set()

    def judge_node(self, node: Mapping[str, Any]) -> None:
        node_name, labels, virtual = _node_facts(node)
        state = self.states.get(node_name)
        interfaces = _interfaces(state)
        shape = (cached_shape(state, interfaces), virtual)
        self.judge_selection(node, node_name, shape, interfaces)
        if self.groups:
            self.judge_conflicts(node_name, labels, state, interfaces, shape[0])

    def judge_selection(self, node: Mapping[str, Any], node_name: str, shape: tuple[str, bool],
                        interfaces: list[dict[str, Any]]) -> None:
        """Does `p` select an interface of this node, within its limits (`check_interface`)? Interfaces
        judged alike on an earlier node (same shape and platform) pass again; they are looked at again
        only while explanations for a denial are still being collected."""
        explain = not self.selected and len(self.reasons) < _MAX_EXPLAINED_NODES
        if shape in self.judged_shapes and not explain:
            to_judge: list[dict[str, Any]] = []
        else:
            self.judged_shapes.add(shape)
            to_judge = interfaces
        rejected: list[str] = []
        for iface in to_judge:
            reason = interface_unselected_reason(self.p, iface, node, self.nics, self.dev_mode, self.selector,
                                                 explain and not self.selected)
            if reason is None:
                self.selected = True
                check_interface(self.p, iface, node_name)
            elif explain:
                rejected.append(f"{iface.get('name')}: {reason}")
        if not self.selected and interfaces:
            if not explain:
                self.unexplained += 1
            elif rejected:
                self.reasons.append(f"node {node_name}: " + ", ".join(rejected))

    def judge_conflicts(self, node_name: str, labels: Mapping[str, Any], state: Mapping[str, Any] | None,
                        interfaces: list[dict[str, Any]], pf_shape: str) -> None:
        """Does `p` conflict with a policy that selects this node too? Skipped for a node with the same
        peer groups and the same PF names (part of the shape) as one judged before."""
        projection = tuple(map(labels.get, self.peer_keys))
        matching = self.matching_groups(projection, labels)
        if not matching or (projection, pf_shape) in self.judged_node_kinds:
            return
        self.judged_node_kinds.add((projection, pf_shape))
        aliases, alias_key = cached_aliases(state, interfaces)
        for selector_key, members in matching:
            if (selector_key, alias_key) in self.judged_groups:
                continue
            self.judged_groups.add((selector_key, alias_key))
            for peer in members:
                self.judge_peer(peer, aliases, alias_key, node_name)

    def matching_groups(self, projection: tuple[str | None, ...],
                        labels: Mapping[str, Any]) -> list[tuple[_SelectorKey, list[Peer]]]:
        matching = self.groups_for.get(projection)
        if matching is None:
            matching = [(key, members) for key, members in self.groups.items()
                        if all(labels.get(k) == v for k, v in key)]
            self.groups_for[projection] = matching
        return matching

    def judge_peer(self, peer: Peer, aliases: Mapping[str, str], alias_key: AliasKey, node_name: str) -> None:
        """One peer on one node: the checks that do not depend on the node once per peer, the PF
        overlap once per (peer, PF naming)."""
        if peer.spec.name not in self.judged_static:
            check_node_independent_conflicts(self.p, peer.spec, node_name)
            self.judged_static.add(peer.spec.name)
        if self.mine and (peer.spec.name, alias_key) not in self.judged_pfs:
            check_pf_conflicts(self.p, self.mine, peer, aliases, node_name)
            self.judged_pfs.add((peer.spec.name, alias_key))

    def deny_unless_selected(self) -> None:
        if self.selected:
            return
        if self.unexplained:
            self.reasons.append(f"and {self.unexplained} more node(s)")
        detail = "; ".join(self.reasons) if self.reasons else "no selected node reports any interface in its NodeState"
        raise Denied(
            "spec.nicSelector",
            f"no supported NIC is selected by the nicSelector in CR {self.p.name} ({detail})",
        )
