"""What one node-policy sync wants the cluster to look like, as pure functions (objects in, desired
objects out).

The reconciler (node_policy.py) writes these results; `sriovop plan` and `sriovop explain` call the
same functions on a cluster snapshot with some policies replaced, so what they show is what the
operator would write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.selectors import node_labels, node_selector_matches
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.controllers.node_policy_apply import PolicyError, desired_bridges, desired_interfaces, sort_policies
from sriovop.controllers.pool_config import rdma_modes
from sriovop.render.device_plugin_config import DevicePluginConfigError, node_config_json

Obj = Mapping[str, Any]


def normalized(value: Any) -> Any:
    """Compare specs the way the server stores them: empty maps/lists/zero values do not count."""
    if isinstance(value, Mapping):
        out = {k: normalized(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", 0, False, [], {})}
    if isinstance(value, list | tuple):
        return [normalized(v) for v in value]
    return value


def status_interfaces(state: Obj | None) -> Any:
    return ((state or {}).get("status") or {}).get("interfaces") or []


def bridges_enabled(config: Obj) -> bool:
    gates = (config.get("spec") or {}).get("featureGates") or {}
    return bool(gates.get(consts.FG_MANAGE_SOFTWARE_BRIDGES,
                          consts.FEATURE_GATE_DEFAULTS[consts.FG_MANAGE_SOFTWARE_BRIDGES]))


def daemon_nodes(config: Obj, all_nodes: Sequence[Obj]) -> list[Obj]:
    """The nodes `configDaemonNodeSelector` (default worker + linux) selects: the ones with a NodeState."""
    selector = (config.get("spec") or {}).get("configDaemonNodeSelector") or consts.DEFAULT_CONFIG_DAEMON_NODE_SELECTOR
    return [n for n in all_nodes if node_selector_matches(selector, node_labels(n))]


def desired_spec(node: Obj, state: Obj | None, sorted_policies: Sequence[Obj], rdma: str | None,
                 with_bridges: bool) -> dict[str, Any]:
    """The NodeState spec for a node whose daemon reported interfaces (raises PolicyError)."""
    desired: dict[str, Any] = {}
    interfaces = desired_interfaces(sorted_policies, node, status_interfaces(state))
    if interfaces:
        desired["interfaces"] = interfaces
    if rdma:
        desired["system"] = {"rdmaMode": rdma}
    if with_bridges:
        ovs = desired_bridges(sorted_policies, node, status_interfaces(state))
        if ovs:
            desired["bridges"] = {"ovs": ovs}
    return desired


def next_spec(node: Obj, state: Obj | None, sorted_policies: Sequence[Obj], rdma: str | None,
              with_bridges: bool) -> dict[str, Any]:
    """The spec the sync leaves on the node's NodeState: a new NodeState starts empty (plus rdmaMode),
    one whose daemon has not reported interfaces yet keeps its spec, any other gets `desired_spec`."""
    if state is None:
        return {"system": {"rdmaMode": rdma}} if rdma else {}
    if not status_interfaces(state):
        return dict(state.get("spec") or {})
    return desired_spec(node, state, sorted_policies, rdma, with_bridges)


def device_plugin_data(sorted_policies: Sequence[Obj], nodes: Sequence[Obj], states: Mapping[str, Obj | None],
                       nics: SupportedNics) -> tuple[dict[str, str], dict[str, bool], list[str]]:
    """The `device-plugin-config` ConfigMap data (node → ResourceConfList JSON), whether each node's
    list is non-empty (its device-plugin label), and the errors of nodes that got an empty list."""
    data: dict[str, str] = {}
    enabled: dict[str, bool] = {}
    errors: list[str] = []
    for node in nodes:
        name = node["metadata"]["name"]
        try:
            data[name], enabled[name] = node_config_json(sorted_policies, node, states.get(name), nics)
        except DevicePluginConfigError as exc:
            errors.append(f"device-plugin config for {name}: {exc}")
            data[name], enabled[name] = node_config_json([], node, states.get(name), nics)
    return data, enabled, errors


@dataclass
class NodeOutcome:
    name: str
    node: Obj
    state: Obj | None
    #: The spec after the sync (the current one when the policies cannot be applied to this node).
    spec: dict[str, Any]
    #: Why the policies cannot be applied to this node (the sync leaves its NodeState alone).
    error: str = ""


@dataclass
class SyncOutcome:
    """Everything one sync would write, computed without writing."""

    policies: list[Obj]
    nodes: list[NodeOutcome] = field(default_factory=list)
    device_plugin: dict[str, str] = field(default_factory=dict)
    device_plugin_enabled: dict[str, bool] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: NodeStates of nodes no longer selected (removed after the stale delay).
    stale: list[str] = field(default_factory=list)


def sync_outcome(config: Obj, policies: Sequence[Obj], all_nodes: Sequence[Obj], states: Mapping[str, Obj],
                 pools: Sequence[Obj], nics: SupportedNics) -> SyncOutcome:
    ordered = sort_policies(policies)
    nodes = daemon_nodes(config, all_nodes)
    modes = rdma_modes(nodes, pools)
    with_bridges = bridges_enabled(config)
    out = SyncOutcome(policies=ordered)
    for node in nodes:
        name = node["metadata"]["name"]
        state = states.get(name)
        try:
            spec = next_spec(node, state, ordered, modes.get(name), with_bridges)
            out.nodes.append(NodeOutcome(name, node, state, spec))
        except PolicyError as exc:
            out.errors.append(f"NodeState {name}: {exc}")
            out.nodes.append(NodeOutcome(name, node, state, dict((state or {}).get("spec") or {}), str(exc)))
    out.device_plugin, out.device_plugin_enabled, dp_errors = device_plugin_data(ordered, nodes, states, nics)
    out.errors.extend(dp_errors)
    selected = {n.name for n in out.nodes}
    out.stale = sorted(name for name in states if name not in selected)
    return out
