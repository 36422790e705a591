"""The drain controller: answers the config daemon's drain requests, a pool's capacity at a time.

The node and NodeState a reconcile acts on are read from the server (never the cache), unless the
cache shows the pair settled (`states.settled`: annotations present, no drain asked for or under way,
nothing to clean up): then the reconcile ends without a read. A request comes from an event of the
cache, which already holds at least the version the event announced, so a change the server has and
the cache does not show yet arrives as a later event and a reconcile that reads the server; the
check only spares the start-up pass, which reconciled every node, its two GETs per node (10,000 at
5,000 nodes, on every start of the operator, over 50 threads). The capacity
count comes from a running view of pools and slots kept from the informers' events (slots.py: our own
grants count until the cache shows them), so a node asking for a slot costs no list; when that view
cannot place a node in a pool, Nodes, NodeStates and pools are listed from the server instead. The
count and the `current-state=Draining` write happen under one lock, so two workers can never both take
the last slot of a pool. Node and NodeState events map to the same request (operator namespace, node name),
so one node is never reconciled by two workers at once.

Beyond upstream: a node deleted while it holds a slot (Draining or DrainComplete) has its NodeState's
`current-state` returned to Idle at once. Upstream leaves it as it was until the stale NodeState is
garbage-collected (30 min by default): a drain that status, tooling and users see as in progress
although no node is left to drain, and that a node re-registering under the same name inherits.

Also beyond upstream: when a node frees a slot (its `current-state` returns to Idle) as many nodes of
its pool waiting for a slot as the pool has free slots are enqueued at once instead of at their next
5 s poll (every waiting node when the slot view cannot place the node), and a drain that a pod holds up is
visible on the NodeState (`sriovnetwork.openshift.io/drain-blocked-by`) and in a Warning Event.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.controllers.drain.drainer import Blocker, Drainer, DrainFailed, DrainStopped
from sriovop.controllers.drain.slots import SlotView
from sriovop.controllers.drain.states import (
    DRAIN_BLOCKED_BY_ANNOTATION,
    REASON_COMPLETE_DRAIN,
    REASON_DRAIN_BLOCKED,
    REASON_DRAIN_NODE,
    Action,
    annotation,
    decide,
    is_full_drain,
    missing_annotations,
    occupies_slot,
    settled,
    stale_blocked_by,
    uses_external_drainer,
)
from sriovop.controllers.pool_config import REASON_POOL_CONFLICT, PoolLookupError, find_node_pool
from sriovop.runtime.cache.reader import CacheError
from sriovop.runtime.client import Client, UncachedReader
from sriovop.runtime.controller import Controller, Funcs, Request, Result, TerminalError
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE, Kind
from sriovop.runtime.retry import retry_on_conflict

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "drain"
#: Upstream's DrainControllerRequeueTime: how often a node waiting for a pool slot asks again.
REQUEUE_AFTER = 5.0
#: Upstream's MaxConcurrentReconciles for this controller.
WORKERS = 50

WAITING_REQUESTS = (consts.DRAIN_REQUIRED, consts.REBOOT_REQUIRED)


class CachedReader(Protocol):
    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]: ...


class Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


class DrainReconciler:
    def __init__(self, client: Client, namespace: str, drainer: Drainer, recorder: Recorder | None = None,
                 *, requeue_after: float = REQUEUE_AFTER, workers: int = WORKERS) -> None:
        self.client = client
        self.reader = UncachedReader(client)
        self.namespace = namespace
        self.drainer = drainer
        self.recorder = recorder
        self.requeue_after = requeue_after
        self.workers = workers
        self._capacity_lock = threading.Lock()
        self.controller: Controller | None = None
        #: Pools and slots from the informers (set up by `setup`); None: every check lists live.
        self.slots: SlotView | None = None
        #: The manager's cache (set up by `setup`), asked whether a node is settled; None: always read.
        self.cache: CachedReader | None = None

    # -- wiring ----------------------------------------------------------------------------------

    def setup(self, manager: Any) -> Controller:
        """Register on `manager` (the namespaced one): watches, the controller, and a stop hook that
        aborts running drains when the manager stops (a drain may otherwise wait out its 90 s)."""
        ctrl = Controller(CONTROLLER_NAME, self.reconcile, workers=self.workers, registry=manager.registry)
        ctrl.watches(manager.cache.informers_for(NODE), map_func=self._node_requests,
                     predicates=[Funcs(on_create=_has_node_state_annotation, on_update=_node_request_changed,
                                       on_delete=lambda o: True)])
        ctrl.watches(manager.cache.informers_for(SRIOV_NETWORK_NODE_STATE),
                     map_func=lambda o: self._node_state_requests(o, manager),
                     predicates=[Funcs(on_update=_current_state_changed, on_delete=lambda o: False)])
        self.slots = SlotView()
        for kind, handler in ((NODE, self.slots.node_handler()), (SRIOV_NETWORK_POOL_CONFIG, self.slots.pool_handler()),
                              (SRIOV_NETWORK_NODE_STATE, self.slots.state_handler())):
            for informer in manager.cache.informers_for(kind):
                informer.add_event_handler(handler)
        self.cache = manager.cache
        manager.add(ctrl)
        manager.add(self._abort_drains_on_stop, need_leader_election=True)
        self.controller = ctrl
        return ctrl

    def _abort_drains_on_stop(self, stop: threading.Event) -> None:
        stop.wait()
        self.drainer.stop_event.set()

    def _node_requests(self, node: Any) -> Iterable[Request]:
        return [Request(self.namespace, _name(node))]

    def _node_state_requests(self, state: Any, manager: Any) -> Iterable[Request]:
        out = [Request(self.namespace, _name(state))]
        if annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE:
            # A slot may have been freed: wake as many of its pool's waiting nodes as it has free slots
            # or, when the slot view cannot tell, every node waiting for one.
            wake = self.slots.to_wake(_name(state)) if self.slots is not None else None
            if wake is not None:
                return out + [Request(self.namespace, n) for n in wake]
            for other in manager.cache.list(SRIOV_NETWORK_NODE_STATE, self.namespace):
                if (_name(other) != _name(state)
                        and annotation(other, consts.NODE_STATE_DRAIN_ANNOTATION) in WAITING_REQUESTS
                        and annotation(other, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE):
                    out.append(Request(self.namespace, _name(other)))
        return out

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, req: Request) -> Result | None:
        if self.slots is not None and self.slots.waiting_behind_full_pool(req.name):
            return Result(requeue_after=self.requeue_after)  # no read at all: woken when a slot frees
        if self._settled_in_cache(req.name):
            return None  # see the module docstring
        try:
            node = self.reader.get(NODE, req.name)
        except NotFound:
            self._release_deleted_node(req.name)
            return None
        try:
            state = self.reader.get(SRIOV_NETWORK_NODE_STATE, req.name, self.namespace)
        except NotFound:
            return None
        if uses_external_drainer(state):
            return None
        node_missing, state_missing = missing_annotations(node, state)
        if node_missing or state_missing:
            self._default_annotations(node, state, node_missing, state_missing)
            return Result(requeue=True)

        node_request = str(annotation(node, consts.NODE_DRAIN_ANNOTATION))
        current = str(annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT))
        action = decide(node_request, current)
        log.debug("drain reconcile", node=req.name, request=node_request, current=current, action=action.value)
        if action is Action.NOTHING:
            if stale_blocked_by(node_request, state):
                self._annotate(state, {DRAIN_BLOCKED_BY_ANNOTATION: None})
            return None
        if action is Action.COMPLETE:
            return self._complete(state)
        if action is Action.INVALID:
            raise TerminalError(
                f"node {req.name}: unexpected drain annotations: node {consts.NODE_DRAIN_ANNOTATION}="
                f"{node_request!r} (want one of {', '.join(consts.DESIRED_DRAIN_STATES)}), NodeState "
                f"{consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT}={current!r} "
                f"(want one of {', '.join(consts.CURRENT_DRAIN_STATES)})")
        if action is Action.START:
            wait = self._try_start(node, state)
            if wait is not None:
                return wait
        return self._drain(node, state, node_request)

    def _settled_in_cache(self, name: str) -> bool:
        if self.cache is None:
            return False
        try:
            node = self.cache.get(NODE, name)
            state = self.cache.get(SRIOV_NETWORK_NODE_STATE, name, self.namespace)
        except (NotFound, CacheError):
            return False  # a deleted node's slot, a NodeState not created yet: the server decides
        return settled(node, state)

    def _release_deleted_node(self, name: str) -> None:
        """The Node is gone: its NodeState must not keep showing a drain nobody can finish. (Its slot is
        already free for the capacity count, which only counts the pool's current members.)"""
        try:
            state = self.reader.get(SRIOV_NETWORK_NODE_STATE, name, self.namespace)
        except NotFound:
            return
        current = annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
        if not occupies_slot(current) or uses_external_drainer(state):
            return
        self._annotate(state, {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE,
                               DRAIN_BLOCKED_BY_ANNOTATION: None})
        log.info("node deleted while holding a drain slot: NodeState back to Idle", node=name, was=current)

    def _default_annotations(self, node: Mapping[str, Any], state: Mapping[str, Any], node_missing: bool,
                             state_missing: bool) -> None:
        """Add missing annotations as Idle, guarded by resourceVersion so a concurrent daemon write wins.

        A Conflict is retried from a new read (`retry_on_conflict`): on a fresh install the policy
        controller labels the same Nodes for the device plugin at the same time (at 5,000 nodes about
        300 of these PATCHes lost that race), and a lost race is not a failed reconcile. A re-read that
        finds the annotation written by someone else leaves it as it is."""
        if node_missing:
            self._add_idle(NODE, node, (consts.NODE_DRAIN_ANNOTATION,), None)
        if state_missing:
            self._add_idle(SRIOV_NETWORK_NODE_STATE, state,
                           (consts.NODE_STATE_DRAIN_ANNOTATION, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT),
                           self.namespace)

    def _add_idle(self, kind: Kind, obj: Mapping[str, Any], keys: tuple[str, ...], namespace: str | None) -> None:
        def attempt(n: int) -> None:
            current = obj if n == 0 else self.reader.get(kind, _name(obj), namespace)
            add = {key: consts.DRAIN_IDLE for key in keys if annotation(current, key) is None}
            if add:
                self.client.patch(kind, _name(current), {"metadata": {
                    "resourceVersion": current["metadata"]["resourceVersion"], "annotations": add}}, namespace)

        retry_on_conflict(attempt)

    def _complete(self, state: Mapping[str, Any]) -> Result | None:
        name = _name(state)
        self.drainer.uncordon(name)
        self._annotate(state, {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE,
                               DRAIN_BLOCKED_BY_ANNOTATION: None})
        self._event(state, REASON_COMPLETE_DRAIN, "drain completed: node uncordoned")
        log.info("drain completed", node=name)
        return None

    def _try_start(self, node: Mapping[str, Any], state: Mapping[str, Any]) -> Result | None:
        """The pool capacity check: None when this node may start draining (and now counts as such)."""
        name = _name(node)
        where = self.slots.pool_of(name) if self.slots is not None else None
        if where is not None and self.slots is not None:
            pool_name, limit = where
            with self._capacity_lock:
                held = self.slots.occupied(pool_name)
                if limit != consts.UNLIMITED and held >= limit:
                    log.debug("pool at its maxUnavailable; waiting", node=name, pool=pool_name, limit=limit)
                    return Result(requeue_after=self.requeue_after)
                written = self._annotate(state, {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAINING})
                if written is not None:
                    self.slots.record_grant(name, int(written["metadata"].get("resourceVersion") or 0))
                log.info("drain slot taken", node=name, pool=pool_name, limit=limit, draining=held + 1)
            return None
        with self._capacity_lock:
            nodes = self.reader.list(NODE)
            pools = self.reader.list(SRIOV_NETWORK_POOL_CONFIG, self.namespace)
            try:
                pool = find_node_pool(node, pools, nodes)
                limit = pool.limit()
            except (PoolLookupError, ValueError) as exc:
                # A configuration mistake, not a transient failure: say so and look again at the
                # normal pace (an exponential retry would wait for hours once the pools are fixed).
                log.warning("cannot find the node's pool; not draining", node=name, error=str(exc))
                self._event(state, REASON_POOL_CONFLICT, f"cannot start draining node {name}: {exc}")
                return Result(requeue_after=self.requeue_after)
            members = set(pool.nodes)
            states = self.reader.list(SRIOV_NETWORK_NODE_STATE, self.namespace)
            draining = sorted(_name(s) for s in states if _name(s) in members
                              and occupies_slot(annotation(s, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)))
            if limit != consts.UNLIMITED and len(draining) >= limit:
                log.info("pool at its maxUnavailable; waiting", node=name, pool=pool.name, limit=limit,
                         draining=draining)
                return Result(requeue_after=self.requeue_after)
            self._annotate(state, {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAINING})
            log.info("drain slot taken", node=name, pool=pool.name, limit=limit, draining=len(draining) + 1)
        return None

    def _drain(self, node: Mapping[str, Any], state: Mapping[str, Any], node_request: str) -> Result | None:
        name = _name(node)
        full = is_full_drain(node_request)
        self._event(state, REASON_DRAIN_NODE, "Drain node has been initiated")
        if full and len(self.reader.list(NODE)) == 1:
            log.info("single-node cluster and a reboot requested: not evicting", node=name)
        else:
            try:
                self.drainer.drain(name, full=full, on_blocked=self._on_blocked)
            except DrainStopped:
                log.info("drain abandoned: shutting down", node=name)
                return None
            except DrainFailed as exc:
                if exc.blocker is not None:
                    self._on_blocked(name, exc.blocker)
                self._event(state, REASON_DRAIN_NODE, f"node drain failed: {exc}")
                raise
        self._annotate(state, {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_COMPLETE,
                               DRAIN_BLOCKED_BY_ANNOTATION: None})
        self._event(state, REASON_DRAIN_NODE, "node drain completed")
        return None

    def _on_blocked(self, node_name: str, blocker: Blocker) -> None:
        log.warning("drain blocked", node=node_name, pod=blocker.pod, reason=blocker.reason)
        try:
            state = self.reader.get(SRIOV_NETWORK_NODE_STATE, node_name, self.namespace)
        except NotFound:
            return
        if annotation(state, DRAIN_BLOCKED_BY_ANNOTATION) != str(blocker):
            self._annotate(state, {DRAIN_BLOCKED_BY_ANNOTATION: str(blocker)})
        self._event(state, REASON_DRAIN_BLOCKED, f"drain of node {node_name} is blocked by pod {blocker}")

    # -- writes ----------------------------------------------------------------------------------

    def _annotate(self, state: Mapping[str, Any], values: Mapping[str, str | None]) -> Mapping[str, Any] | None:
        """Merge-patch the NodeState's annotations; the written object, or None when nothing changed."""
        current = state["metadata"].get("annotations") or {}
        if all(current.get(k) == v for k, v in values.items()):
            return None
        written: Mapping[str, Any] = self.client.patch(SRIOV_NETWORK_NODE_STATE, _name(state),
                                                       {"metadata": {"annotations": dict(values)}}, self.namespace)
        return written

    def _event(self, state: Mapping[str, Any], reason: str, message: str) -> None:
        # Upstream records every drain event as Warning, even on success; tooling filters on it.
        if self.recorder is not None:
            self.recorder.event(state, "Warning", reason, message)


# -- predicates ------------------------------------------------------------------------------------


def _has_node_state_annotation(node: Any) -> bool:
    return annotation(node, consts.NODE_DRAIN_ANNOTATION) is not None


def _node_request_changed(old: Any, new: Any) -> bool:
    return bool(annotation(old, consts.NODE_DRAIN_ANNOTATION) != annotation(new, consts.NODE_DRAIN_ANNOTATION))


def _current_state_changed(old: Any, new: Any) -> bool:
    key = consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT
    return bool(annotation(old, key) != annotation(new, key))
