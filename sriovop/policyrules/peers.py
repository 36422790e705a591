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
from sriovop.policyrules.identity_memo import IdentityMemo
from sriovop.policyrules.pfselection import PfName, parse_pf_name, ranges_overlap
from sriovop.policyrules.spec import PolicySpec, parse_policy_leniently


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


#: Stored policy → its parsed form (frozen cache objects only, see IdentityMemo).
_PEER_CACHE: IdentityMemo[Peer | None] = IdentityMemo(4096)


def _parse_peer(obj: object) -> Peer | None:
    spec = parse_policy_leniently(obj)
    return to_peer(spec) if spec else None


def cached_peer(obj: object) -> Peer | None:
    return _PEER_CACHE.get(obj, lambda: _parse_peer(obj))


#: A node's name aliases as one string (`name<TAB>real` lines, sorted): the requests' memos look it up
#: once per peer and node class, and a str keeps its hash where a tuple of pairs is hashed on every lookup.
AliasKey = str
#: NodeState → its name aliases and their hashable key; the same identity rule as peers. Sized for one
#: entry per node of a large cluster: a smaller bound would be cleared on every request.
NODE_MEMO_LIMIT = 65536
_ALIAS_CACHE: IdentityMemo[tuple[dict[str, str], AliasKey]] = IdentityMemo(NODE_MEMO_LIMIT)


def _aliases(interfaces: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Every PF name and alternative name on a node → the PF's real name (first interface wins)."""
    out: dict[str, str] = {}
    for iface in interfaces:
        real = loose_str(iface.get("name"))
        for name in interface_names(iface):
            out.setdefault(name, real or name)
    return out


def _keyed_aliases(interfaces: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], AliasKey]:
    aliases = _aliases(interfaces)
    return aliases, "\n".join(f"{name}\t{real}" for name, real in sorted(aliases.items()))


def cached_aliases(state: object, interfaces: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], AliasKey]:
    return _ALIAS_CACHE.get(state, lambda: _keyed_aliases(interfaces))


#: NodeState → the shape of its interfaces; the same identity rule as peers.
_SHAPE_CACHE: IdentityMemo[str] = IdentityMemo(NODE_MEMO_LIMIT)
#: Interface fields that no selection or limit check reads (unique per node, so they would defeat the memo).
_SHAPELESS = frozenset({"mac", "linkSpeed", "Vfs", "eSwitchMode"})


def cached_shape(state: object, interfaces: Sequence[Mapping[str, Any]]) -> str:
    """A key equal for NodeStates whose interfaces are judged alike: everything the per-interface
    checks read (names, PCI addresses, vendor, device, VF counts, MTU, link type, netFilter, ...).
    Nodes of one hardware model share it, so a request judges each model once instead of each node."""
    return _SHAPE_CACHE.get(state, lambda: json.dumps(
        [{k: v for k, v in i.items() if k not in _SHAPELESS} for i in interfaces], sort_keys=True))


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
