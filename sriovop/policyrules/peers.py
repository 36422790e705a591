"""Conflicts between a policy and the other stored policies that select the same node.

A validation compares one policy with every peer on every selected node; parsed peers and per-node
name aliases are memoised for frozen (cache) objects, and each distinct (peer, PF naming) pair is
judged once, which keeps 50 nodes x 50 policies at a few hundred comparisons.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sriovop.api.v1.nicselector import interface_names
from sriovop.api.v1.pfnames import PfNameError
from sriovop.policyrules.denied import Denied
from sriovop.policyrules.fields import loose_str
from sriovop.policyrules.pfselection import PfName, parse_pf_name, ranges_overlap
from sriovop.policyrules.spec import PolicySpec, parse_policy_leniently
from sriovop.runtime.objects import FrozenDict


@dataclass(frozen=True, slots=True)
class Peer:
    """Another policy, with its pfNames parsed once per request rather than once per node."""

    spec: PolicySpec
    pfs: tuple[tuple[str, PfName], ...]
    selector_key: tuple[tuple[str, str], ...]


def to_peer(spec: PolicySpec) -> Peer:
    pfs = []
    for entry in spec.nic.pf_names:
        try:
            pfs.append((entry, parse_pf_name(entry)))
        except PfNameError:
            continue  # judged when that policy was admitted; unparsable entries select nothing
    return Peer(spec, tuple(pfs), tuple(sorted(spec.node_selector.items())))


#: id(stored policy) → (that object, its parsed form), for frozen objects only: a cache hands out the
#: same FrozenDict until the object changes (it is replaced, never mutated), so an identity check makes
#: a hit safe. A live view's fresh plain dicts are never kept (they would only pin memory). Bounded.
_PEER_CACHE: dict[int, tuple[object, Peer | None]] = {}
_PEER_CACHE_MAX = 4096


def cached_peer(obj: object) -> Peer | None:
    hit = _PEER_CACHE.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    spec = parse_policy_leniently(obj)
    peer = to_peer(spec) if spec else None
    if type(obj) is FrozenDict:
        if len(_PEER_CACHE) >= _PEER_CACHE_MAX:
            _PEER_CACHE.clear()
        _PEER_CACHE[id(obj)] = (obj, peer)
    return peer


AliasKey = tuple[tuple[str, str], ...]
#: id(NodeState) → (that object, its name aliases, their hashable key); the same identity rule as peers.
#: Sized for one entry per node of a large cluster: a smaller bound would be cleared on every request.
_ALIAS_CACHE: dict[int, tuple[object, dict[str, str], AliasKey]] = {}
_ALIAS_CACHE_MAX = 65536


def _aliases(interfaces: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every PF name and alternative name on a node → the PF's real name (first interface wins)."""
    out: dict[str, str] = {}
    for iface in interfaces:
        real = loose_str(iface.get("name"))
        for name in interface_names(iface):
            out.setdefault(name, real or name)
    return out


def cached_aliases(state: object, interfaces: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], AliasKey]:
    hit = _ALIAS_CACHE.get(id(state))
    if hit is not None and hit[0] is state:
        return hit[1], hit[2]
    aliases = _aliases(interfaces)
    key = tuple(sorted(aliases.items()))
    if len(_ALIAS_CACHE) >= _ALIAS_CACHE_MAX:
        _ALIAS_CACHE.clear()
    if type(state) is FrozenDict:
        _ALIAS_CACHE[id(state)] = (state, aliases, key)
    return aliases, key


#: id(NodeState) → (that object, the shape of its interfaces); the same identity rule as peers.
_SHAPE_CACHE: dict[int, tuple[object, str]] = {}
#: Interface fields that no selection or limit check reads (unique per node, so they would defeat the memo).
_SHAPELESS = frozenset({"mac", "linkSpeed", "Vfs", "eSwitchMode"})


def cached_shape(state: object, interfaces: Sequence[Mapping[str, Any]]) -> str:
    """A key equal for NodeStates whose interfaces are judged alike: everything the per-interface
    checks read (names, PCI addresses, vendor, device, VF counts, MTU, link type, netFilter, ...).
    Nodes of one hardware model share it, so a request judges each model once instead of each node."""
    hit = _SHAPE_CACHE.get(id(state))
    if hit is not None and hit[0] is state:
        return hit[1]
    key = json.dumps([{k: v for k, v in i.items() if k not in _SHAPELESS} for i in interfaces], sort_keys=True)
    if len(_SHAPE_CACHE) >= _ALIAS_CACHE_MAX:
        _SHAPE_CACHE.clear()
    if type(state) is FrozenDict:
        _SHAPE_CACHE[id(state)] = (state, key)
    return key


def check_pf_conflicts(
    p: PolicySpec, mine: Sequence[tuple[int, str, PfName]], peer: Peer, aliases: Mapping[str, str], node: str = "",
) -> None:
    """The same PF (alternative names resolved through the node's NodeState) in both policies; the
    denial names the node (the first one where both select it) and the PF where they collide."""
    where = f" (node {node}, PF {{}})" if node else " (PF {})"
    other = peer.spec
    for i, entry, cur in mine:
        cur_name = aliases.get(cur.name, cur.name)
        for other_entry, prev in peer.pfs:
            if aliases.get(prev.name, prev.name) != cur_name:
                continue
            if p.externally_managed != other.externally_managed:
                raise Denied(
                    "spec.externallyManaged",
                    f"externallyManage is inconsistent with existing policy {other.name} on PF {cur_name}"
                    + (f" of node {node}" if node else ""),
                )
            if ranges_overlap(cur, prev):
                raise Denied(
                    f"spec.nicSelector.pfNames[{i}]",
                    f"VF index range in {entry} is overlapped with existing policy {other.name} ({other_entry})"
                    + where.format(cur_name),
                )


def check_node_independent_conflicts(p: PolicySpec, other: PolicySpec, node: str = "") -> None:
    """Conflicts that do not depend on the node's PFs; `node` (one node both policies select) is named
    in the denial so the user sees where they meet."""
    on_node = f" on node {node}" if node else ""
    for i, root in enumerate(p.nic.root_devices):
        if root in other.nic.root_devices:
            raise Denied(
                f"spec.nicSelector.rootDevices[{i}]",
                f"root device {root} is overlapped with existing policy {other.name} (PF {root}{on_node})",
            )
    if p.resource_name == other.resource_name and p.exclude_topology != other.exclude_topology:
        raise Denied(
            "spec.excludeTopology",
            f"excludeTopology[{str(p.exclude_topology).lower()}] field conflicts with policy "
            f"[{other.name}].ExcludeTopology[{str(other.exclude_topology).lower()}] as they target the same "
            f"resource[{p.resource_name}]" + (f" (both select node {node})" if node else ""),
        )
