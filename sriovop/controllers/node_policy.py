"""SriovNetworkNodePolicy → one NodeState per node, the device-plugin ConfigMap and node labels.

Wiring (the namespaced manager, whose cache covers the operator namespace; Nodes are cluster-scoped
and cached cluster-wide by the same manager):

    NodePolicyReconciler(mgr.client, mgr.client, namespace, nics=supported_nics,
                         stale_delay_minutes=stale_delay_from_env(), recorder=recorder).setup(mgr)

`setup` builds the Controller `sriovnetworknodepolicy`, watches policies, pool configs and the operator
config (created, deleted or a changed spec: not their status writes), NodeStates (create/delete, or a
change of the reported `status.interfaces`) and Nodes (create/delete, label changes), maps every event
to the single key `node-policy-sync-event` except a NodeState's reported interfaces (below), enqueues
one initial sync, adds the controller to the manager and returns it.

A change of one NodeState's reported interfaces is that node's own key, `nodestate/<node>`: the sync
of that one node (steps 3, 5 and 6 for it alone; its ConfigMap entry is the only one written). Upstream
resyncs every node on it. Every node reports new VFs during a rollout, so that would be a sync of all N
nodes per report, bounded only by the debounce below (a full sync a second throughout the rollout). A
node that is not selected (any more) gets the full sync, which handles stale NodeStates.

One sync (upstream's global policy reconcile):
1. without SriovOperatorConfig `default`, requeue after 5 s;
2. policies sorted by priority number descending then name (the `default` policy ignored); nodes
   matching `configDaemonNodeSelector` (default worker + linux);
3. per node, NodeState `<node>` in the operator namespace with a controller ownerReference to the
   operator config: created with an empty spec if missing; left alone (except the keep-until
   annotation) until the daemon reported interfaces; otherwise its spec is recomputed with the policy
   `Apply` merge (node_policy_apply) plus `system.rdmaMode` from the node's pool (and, with the
   feature gate manageSoftwareBridges, `bridges.ovs` from ApplyBridgeConfig), and written only
   when it changed. These writes run concurrently (`write_workers`), before anything else;
4. NodeStates of nodes no longer selected: the device-plugin label is removed from the node, and the
   NodeState is deleted once `sriovnetwork.openshift.io/keep-state-until` (now + the delay, RFC3339)
   has passed; delay 0 deletes at once;
5. ConfigMap `device-plugin-config`: per node, the device plugin's ResourceConfList JSON
   (render.device_plugin_config), owned by the operator config; written when changed;
6. node label `sriovnetwork.openshift.io/device-plugin` = Enabled (non-empty resource list) or
   Disabled, patched only when different;
7. requeue after 5 minutes (upstream's resync).

Debounce: upstream delays every event by 1 s ("earliest wins", so a burst costs one sync). Here the
first event after a quiet period starts a sync at once and events within `debounce` seconds of the
last sync start are batched into one sync at the end of that window: the same bound on sync rate,
without the fixed second of latency on every change.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.api.v1.selectors import node_labels
from sriovop.api.v1.supportednics import SupportedNics, default_supported_nics
from sriovop.controllers.node_policy_apply import sort_policies
from sriovop.controllers.node_policy_desired import (
    bridges_enabled,
    daemon_nodes,
    desired_spec,
    device_plugin_data,
    normalized,
)
from sriovop.controllers.node_policy_desired import status_interfaces as _interfaces
from sriovop.controllers.node_policy_outcome import SyncOutcome
from sriovop.controllers.pool_config import rdma_modes
from sriovop.runtime.controller import Controller, Funcs, Request, Result
from sriovop.runtime.createupdate import create_or_update
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from sriovop.runtime.objects import thaw
from sriovop.runtime.retry import retry_on_conflict

log = structlog.get_logger(__name__)

SYNC_KEY_NAME = "node-policy-sync-event"
#: The key of one node's sync is this prefix and the node's name (a node name has no "/").
NODE_KEY_PREFIX = "nodestate/"
CONTROLLER_NAME = "sriovnetworknodepolicy"
RESYNC_PERIOD = 300.0
NO_CONFIG_REQUEUE = 5.0
DEFAULT_DEBOUNCE = 1.0
DEFAULT_WRITE_WORKERS = 16
REASON_POLICY_NOT_APPLIED = "PolicyNotApplied"

Obj = Mapping[str, Any]


def stale_delay_from_env(env: Mapping[str, str] | None = None) -> int:
    """STALE_NODE_STATE_CLEANUP_DELAY_MINUTES; invalid or negative values fall back to 30 (upstream)."""
    raw = (os.environ if env is None else env).get(consts.ENV_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES)
    default = consts.DEFAULT_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        log.warning("invalid stale NodeState cleanup delay; using the default",
                    value=raw, default=default)
        return default
    return value if value >= 0 else default


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_rfc3339(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


class NodePolicyReconciler:
    def __init__(
        self, client: Any, reader: Any, namespace: str, *, nics: SupportedNics | None = None,
        stale_delay_minutes: float = consts.DEFAULT_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES,
        recorder: Any = None, debounce: float = DEFAULT_DEBOUNCE, write_workers: int = DEFAULT_WRITE_WORKERS,
        api_reader: Any = None, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`client` writes; `reader` reads (cached in the operator); `api_reader` (default: `client`)
        re-reads a NodeState after a write conflict. `nics` None: read `supported-nic-ids` per sync."""
        if stale_delay_minutes < 0:
            raise ValueError(f"stale_delay_minutes must be >= 0, got {stale_delay_minutes}")
        if write_workers < 1:
            raise ValueError(f"write_workers must be >= 1, got {write_workers}")
        self.client = client
        self.reader = reader
        self.api_reader = api_reader if api_reader is not None else client
        self.namespace = namespace
        self.nics = nics
        self.stale_delay_minutes = stale_delay_minutes
        self.recorder = recorder
        self.debounce = debounce
        self.write_workers = write_workers
        self.clock = clock
        self.key = Request(namespace, SYNC_KEY_NAME)
        self.controller: Controller | None = None
        self._last_start = 0.0
        self._lock = threading.Lock()
        self._log = log.bind(controller=CONTROLLER_NAME)

    # -- wiring ----------------------------------------------------------------------------------

    def setup(self, manager: Any) -> Controller:
        ctrl = Controller(CONTROLLER_NAME, self.reconcile, workers=1, registry=manager.registry)
        self.controller = ctrl
        cache = manager.cache
        trigger = self.trigger
        # Policies, pools and the operator config: the sync reads their names and specs only. The
        # policy-status controller writes the policies' and pools' status as nodes progress (up to once
        # a second in a rollout); acting on each of those writes was a full sync a second, the most of
        # the operator's CPU in a 1,000-node rollout.
        spec_changed = Funcs(on_update=lambda old, new: old.get("spec") != new.get("spec"))
        ctrl.watches(cache.informers_for(SRIOV_NETWORK_NODE_POLICY), map_func=trigger, predicates=[spec_changed])
        ctrl.watches(cache.informers_for(SRIOV_NETWORK_POOL_CONFIG), map_func=trigger, predicates=[spec_changed])
        ctrl.watches(cache.informers_for(SRIOV_OPERATOR_CONFIG), map_func=trigger, predicates=[spec_changed])
        states = cache.informers_for(SRIOV_NETWORK_NODE_STATE)
        ctrl.watches(states, map_func=trigger, predicates=[Funcs(on_update=lambda old, new: False)])
        ctrl.watches(states, map_func=self.node_key, predicates=[Funcs(
            on_create=lambda obj: False, on_delete=lambda obj: False,
            on_update=lambda old, new: _interfaces(old) != _interfaces(new))])
        ctrl.watches(cache.informers_for(NODE), map_func=trigger, predicates=[Funcs(
            on_update=lambda old, new: node_labels(old) != node_labels(new))])
        ctrl.enqueue(self.key)
        manager.add(ctrl)
        return ctrl

    def trigger(self, _obj: Any = None) -> Iterable[Request]:
        """Map any event to the single sync key, debounced (see the module docstring)."""
        ctrl = self.controller
        if ctrl is None:
            return [self.key]
        with self._lock:
            wait = self._last_start + self.debounce - time.monotonic()
        if wait <= 0:
            return [self.key]
        ctrl.queue.add_after(self.key, wait)
        return []

    def node_key(self, state: Obj) -> Iterable[Request]:
        """A NodeState's reported interfaces changed: the sync of its node alone."""
        return [Request(self.namespace, NODE_KEY_PREFIX + state["metadata"]["name"])]

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, req: Request) -> Result | None:
        with self._lock:
            self._last_start = time.monotonic()
        try:
            config = self.reader.get(SRIOV_OPERATOR_CONFIG, consts.DEFAULT_CONFIG_NAME, self.namespace)
        except NotFound:
            self._log.info("no SriovOperatorConfig default yet; retrying", namespace=self.namespace)
            return Result(requeue_after=NO_CONFIG_REQUEUE)
        if req.name.startswith(NODE_KEY_PREFIX):
            return self.sync_node(config, req.name[len(NODE_KEY_PREFIX):])
        return self.sync(config)

    def sync_node(self, config: Obj, name: str) -> Result | None:
        """One node's NodeState spec, device-plugin ConfigMap entry and label, as the full sync would
        write them; the full sync instead when the node is gone or not selected."""
        try:
            node = self.reader.get(NODE, name)
        except NotFound:
            node = None
        if node is None or not daemon_nodes(config, [node]):
            self._enqueue_full()
            return None
        policies = sort_policies(self.reader.list(SRIOV_NETWORK_NODE_POLICY, self.namespace))
        owner = _owner_reference(config)
        mode = rdma_modes([node], self.reader.list(SRIOV_NETWORK_POOL_CONFIG, self.namespace)).get(name)
        outcome = SyncOutcome()
        state = self._cached_state(name)
        outcome.node(name, lambda: self._sync_node_state(node, state, policies, owner, mode,
                                                         bridges_enabled(config)))
        # The device plugin's entry reads the reported interfaces (status), which the write above leaves.
        enabled = self._sync_device_plugin_config(policies, [node], {name: state}, owner, outcome.errors,
                                                  only=name)
        self._label_node(node, enabled.get(name, False))
        self._report_bad_policies(policies, outcome.bad_policies)
        outcome.raise_if_incomplete("node sync")
        return None

    def _cached_state(self, name: str) -> Obj | None:
        try:
            state: Obj = self.reader.get(SRIOV_NETWORK_NODE_STATE, name, self.namespace)
        except NotFound:
            return None
        return state

    def _enqueue_full(self) -> None:
        """Queue the full sync (debounced like any event's)."""
        if self.controller is not None:
            for req in self.trigger():
                self.controller.enqueue(req)

    def sync(self, config: Obj) -> Result:
        started = time.perf_counter()
        policies = sort_policies(self.reader.list(SRIOV_NETWORK_NODE_POLICY, self.namespace))
        all_nodes = self.reader.list(NODE)
        nodes = daemon_nodes(config, all_nodes)
        states = {s["metadata"]["name"]: s for s in self.reader.list(SRIOV_NETWORK_NODE_STATE, self.namespace)}
        modes = rdma_modes(nodes, self.reader.list(SRIOV_NETWORK_POOL_CONFIG, self.namespace))
        owner = _owner_reference(config)
        with_bridges = bridges_enabled(config)

        selected = {n["metadata"]["name"] for n in nodes}
        stale = [s for name, s in states.items() if name not in selected]
        outcome = SyncOutcome()
        with ThreadPoolExecutor(max_workers=self.write_workers, thread_name_prefix="nodestate-sync") as pool:
            # Each NodeState is handed to its write and not kept here: the watch replaces it in the cache
            # while the sync runs, and holding every old version until the end doubled the NodeStates'
            # memory at the peak (operator RSS at 5,000 nodes).
            futures = [pool.submit(self._sync_node_state, node, states.pop(node["metadata"]["name"], None),
                                   policies, owner, modes.get(node["metadata"]["name"]), with_bridges)
                       for node in nodes]
            del states
            for node, fut in zip(nodes, futures, strict=True):  # in order; all run concurrently
                outcome.node(node["metadata"]["name"], fut.result)
            nodestates_seconds = time.perf_counter() - started

            by_name = {n["metadata"]["name"]: n for n in all_nodes}
            requeue = RESYNC_PERIOD
            for wait in pool.map(lambda s: self._handle_stale(s, by_name.get(s["metadata"]["name"])), stale):
                if wait is not None:
                    requeue = min(requeue, wait)

            # The device plugin reads each NodeState's reported interfaces (status), which the writes
            # above do not change: the cache has them, as fresh as or fresher than the sync's first list.
            current = {s["metadata"]["name"]: s for s in self.reader.list(SRIOV_NETWORK_NODE_STATE, self.namespace)}
            enabled = self._sync_device_plugin_config(policies, nodes, current, owner, outcome.errors)
            list(pool.map(lambda n: self._label_node(n, enabled.get(n["metadata"]["name"], False)), nodes))
        self._log.info("policy sync done", nodes=len(nodes), policies=len(policies), stale=len(stale),
                       nodestates_seconds=round(nodestates_seconds, 3),
                       seconds=round(time.perf_counter() - started, 3))
        self._report_bad_policies(policies, outcome.bad_policies)
        outcome.raise_if_incomplete("policy sync")
        return Result(requeue_after=requeue)

    def _report_bad_policies(self, policies: Sequence[Obj], bad: Mapping[str, str]) -> None:
        """A policy that cannot be applied gets a Warning Event (the recorder rate-limits repeats), so
        the user sees why its nodes are not configured instead of only an operator log line."""
        if self.recorder is None:
            return
        for policy in policies:
            message = bad.get(policy["metadata"]["name"])
            if message:
                try:
                    self.recorder.event(policy, "Warning", REASON_POLICY_NOT_APPLIED, message)
                except (ValueError, TypeError) as exc:
                    self._log.warning("event not recorded", error=str(exc))

    # -- NodeStates ------------------------------------------------------------------------------

    def _sync_node_state(self, node: Obj, state: Obj | None, policies: Sequence[Obj], owner: dict[str, Any],
                         rdma: str | None, bridges_enabled: bool) -> None:
        name = node["metadata"]["name"]
        if state is None:
            body: dict[str, Any] = {
                "apiVersion": SRIOV_NETWORK_NODE_STATE.api_version, "kind": SRIOV_NETWORK_NODE_STATE.kind,
                "metadata": {"name": name, "namespace": self.namespace, "ownerReferences": [owner]},
                "spec": {},
            }
            if rdma:
                body["spec"]["system"] = {"rdmaMode": rdma}
            try:
                self.client.create(SRIOV_NETWORK_NODE_STATE, body, self.namespace)
                self._log.info("created NodeState", node=name)
                return
            except Conflict as exc:
                if not exc.already_exists:
                    raise
                state = self.api_reader.get(SRIOV_NETWORK_NODE_STATE, name, self.namespace)
        cached = state

        def update(attempt: int) -> None:
            # The first attempt starts from the read above; after a conflict that read was stale.
            current = cached if attempt == 0 else self.api_reader.get(SRIOV_NETWORK_NODE_STATE, name, self.namespace)
            if attempt:
                self._log.info("NodeState changed under us; re-read it", node=name)
            meta = current["metadata"]
            keep = (meta.get("annotations") or {}).get(consts.NODE_STATE_KEEP_UNTIL_ANNOTATION)
            if not _interfaces(current):
                if keep is None:
                    return
                new = _without_status(current)
                new["metadata"]["annotations"].pop(consts.NODE_STATE_KEEP_UNTIL_ANNOTATION, None)
            else:
                desired = desired_spec(node, current, policies, rdma, bridges_enabled)
                if (keep is None and normalized(current.get("spec") or {}) == normalized(desired)
                        and _same_owner(meta.get("ownerReferences"), owner)):
                    return
                new = _without_status(current)
                new["spec"] = desired
                new["metadata"]["ownerReferences"] = _with_owner(new["metadata"].get("ownerReferences"), owner)
                if keep is not None:
                    new["metadata"]["annotations"].pop(consts.NODE_STATE_KEEP_UNTIL_ANNOTATION, None)
            self.client.update(SRIOV_NETWORK_NODE_STATE, new)
            self._log.info("updated NodeState", node=name)

        retry_on_conflict(update, attempts=3)

    def _handle_stale(self, state: Obj, node: Obj | None) -> float | None:
        """A NodeState whose node is gone or no longer selected; returns seconds until it is due."""
        meta = state["metadata"]
        name = meta["name"]
        if node is not None and consts.DEVICE_PLUGIN_LABEL in node_labels(node):
            self._patch_node_label(name, None)
        if self.stale_delay_minutes == 0:
            self._delete_state(name)
            return None
        now = self.clock()
        raw = (meta.get("annotations") or {}).get(consts.NODE_STATE_KEEP_UNTIL_ANNOTATION)
        until = _parse_rfc3339(raw) if raw else None
        if until is None:
            until = now + timedelta(minutes=self.stale_delay_minutes)
            patch = {"metadata": {"annotations": {consts.NODE_STATE_KEEP_UNTIL_ANNOTATION: _rfc3339(until)}}}
            try:
                self.client.patch(SRIOV_NETWORK_NODE_STATE, name, patch, self.namespace)
                self._log.info("stale NodeState kept until", node=name, until=_rfc3339(until))
            except NotFound:
                return None
            return self.stale_delay_minutes * 60.0
        if now >= until:
            self._delete_state(name)
            return None
        return max(1.0, (until - now).total_seconds())

    def _delete_state(self, name: str) -> None:
        try:
            self.client.delete(SRIOV_NETWORK_NODE_STATE, name, self.namespace)
            self._log.info("deleted stale NodeState", node=name)
        except NotFound:
            pass

    # -- device plugin -----------------------------------------------------------------------------

    def _supported_nics(self) -> SupportedNics:
        if self.nics is not None:
            return self.nics
        try:
            cm = self.reader.get(CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, self.namespace)
        except NotFound:
            self._log.warning("supported-nic-ids ConfigMap missing; using the built-in list")
            return default_supported_nics()
        return SupportedNics.from_configmap(cm, strict=False)

    def _sync_device_plugin_config(self, policies: Sequence[Obj], nodes: Sequence[Obj],
                                   states: Mapping[str, Obj | None], owner: dict[str, Any],
                                   errors: list[str], only: str | None = None) -> dict[str, bool]:
        """The ConfigMap's data for `nodes`: all of it, or with `only`, that node's entry alone."""
        data, enabled, dp_errors = device_plugin_data(policies, nodes, states, self._supported_nics())
        errors.extend(dp_errors)

        def mutate(cm: dict[str, Any]) -> None:
            want = data if only is None else {**(cm.get("data") or {}), only: data[only]}
            if (cm.get("data") or {}) != want:
                cm["data"] = want
            if not _same_owner(cm["metadata"].get("ownerReferences"), owner):
                cm["metadata"]["ownerReferences"] = _with_owner(cm["metadata"].get("ownerReferences"), owner)

        create_or_update(self.client, CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, self.namespace, mutate,
                         reader=self.reader, fresh_reader=self.api_reader)
        return enabled

    def _label_node(self, node: Obj, enabled: bool) -> None:
        want = consts.DEVICE_PLUGIN_LABEL_ENABLED if enabled else consts.DEVICE_PLUGIN_LABEL_DISABLED
        if node_labels(node).get(consts.DEVICE_PLUGIN_LABEL) != want:
            self._patch_node_label(node["metadata"]["name"], want)

    def _patch_node_label(self, name: str, value: str | None) -> None:
        try:
            self.client.patch(NODE, name, {"metadata": {"labels": {consts.DEVICE_PLUGIN_LABEL: value}}})
        except NotFound:
            pass


def _without_status(state: Obj) -> dict[str, Any]:
    """A mutable copy of a NodeState for a PUT, without its status: status is a subresource, which the
    PUT ignores, and the largest part of the object, so it is not copied for every write."""
    return {k: thaw(v) for k, v in state.items() if k != "status"}


def _owner_reference(config: Obj) -> dict[str, Any]:
    meta = config["metadata"]
    return {"apiVersion": SRIOV_OPERATOR_CONFIG.api_version, "kind": SRIOV_OPERATOR_CONFIG.kind,
            "name": meta["name"], "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}


def _same_owner(refs: Any, owner: Mapping[str, Any]) -> bool:
    return any(r.get("uid") == owner["uid"] and r.get("controller") for r in refs or [])


def _with_owner(refs: Any, owner: dict[str, Any]) -> list[Any]:
    """Our controller reference replaces any other controller reference; other owners are kept."""
    kept = [thaw(r) for r in refs or [] if not r.get("controller") and r.get("uid") != owner["uid"]]
    return [*kept, dict(owner)]
