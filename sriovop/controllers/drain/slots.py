"""The drain controller's running count of pool slots, kept from its informers' events.

Why: the capacity check used to list every Node, pool and NodeState from the API server for each
node that asked to start draining, under one lock - and every node waiting for a slot asks again every
5 s and whenever any slot frees. A rollout across N nodes thus made O(N) lists of O(N) objects, the
waiting ones many times over: at 500 nodes most of the rollout went to those lists. Here the pool of
every node and the set of nodes holding a slot (NodeState `current-state` Draining or DrainComplete)
are kept from the events the controller already receives, so a check costs O(slots held).

A cache lags behind the server. Two things make the count safe anyway:
- a slot granted here (our own `Draining` write) counts from the moment it is written until the cache
  shows that write (`record_grant`, by resourceVersion), so two grants can never both take the last
  slot; grants happen under the controller's capacity lock, in one process (the leader);
- a slot released (Idle written) that the cache does not show yet still counts: the view errs on the
  side of waiting, and the release's own event wakes the waiting nodes.
A node whose pool cannot be told from the cache (a node in two pools, a malformed selector or
maxUnavailable) gets None, and the controller falls back to reading everything from the server,
which also reports the problem.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.drain.states import annotation, occupies_slot
from sriovop.controllers.pool_config import PoolLookupError, PoolMembership
from sriovop.runtime.cache.listener import FuncHandler

WAITING_REQUESTS = (consts.DRAIN_REQUIRED, consts.REBOOT_REQUIRED)


def _name(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _unwrap(obj: Any) -> Mapping[str, Any] | None:
    """An informer's delete may hand over a tombstone; its last known object, if any."""
    inner = getattr(obj, "obj", obj)
    return inner if isinstance(inner, Mapping) else None


class SlotView:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._labels: dict[str, Mapping[str, str]] = {}
        self._pools: dict[str, Mapping[str, Any]] = {}
        #: NodeState name -> (desired-state, current-state, resourceVersion) as last seen.
        self._states: dict[str, tuple[str | None, str | None, int]] = {}
        self._holders: set[str] = set()
        #: NodeStates asking for a drain (desired-state) that hold no slot (current-state Idle).
        self._waiting: set[str] = set()
        #: node -> (pool, limit); None until rebuilt after a Node label or pool change.
        self._index: dict[str, tuple[str, int]] | None = None
        #: Our own grants the cache does not show yet: node -> resourceVersion of the write.
        self._granted: dict[str, int] = {}

    # -- event handlers ----------------------------------------------------------------------------
    def _handler(self, put: Callable[[Mapping[str, Any]], None], remove: Callable[[str], None]) -> FuncHandler:
        """An informer handler calling `put(obj)` / `remove(name)` under the view's lock."""
        def add(obj: Any, *_: Any) -> None:
            with self._lock:
                put(obj)

        def delete(obj: Any) -> None:
            inner = _unwrap(obj)
            if inner is not None:
                with self._lock:
                    remove(_name(inner))

        return FuncHandler(add=add, update=lambda _old, new: add(new), delete=delete)

    def node_handler(self) -> FuncHandler:
        def put(node: Mapping[str, Any]) -> None:
            # The cache's own read-only mapping, not a copy: one per node (5,000 copies held 1.3 MiB).
            labels = node["metadata"].get("labels") or {}
            if self._labels.get(_name(node)) != labels:
                self._labels[_name(node)] = labels
                self._index = None

        def remove(name: str) -> None:
            self._labels.pop(name, None)
            self._index = None

        return self._handler(put, remove)

    def pool_handler(self) -> FuncHandler:
        def put(pool: Mapping[str, Any]) -> None:
            old = self._pools.get(_name(pool))
            self._pools[_name(pool)] = pool
            if old is None or old.get("spec") != pool.get("spec"):
                self._index = None  # not on status writes: a rollout writes pool status every second

        def remove(name: str) -> None:
            self._pools.pop(name, None)
            self._index = None

        return self._handler(put, remove)

    def state_handler(self) -> FuncHandler:
        def put(state: Mapping[str, Any]) -> None:
            name, rv = _name(state), _rv(state)
            current = annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
            self._states[name] = (annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION), current, rv)
            if occupies_slot(current):
                self._holders.add(name)
            else:
                self._holders.discard(name)
            desired = annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION)
            if desired in WAITING_REQUESTS and current == consts.DRAIN_IDLE:
                self._waiting.add(name)
            else:
                self._waiting.discard(name)
            if name in self._granted and rv >= self._granted[name]:
                del self._granted[name]  # the cache shows our write (or a later one) now

        def remove(name: str) -> None:
            self._states.pop(name, None)
            self._holders.discard(name)
            self._waiting.discard(name)
            self._granted.pop(name, None)

        return self._handler(put, remove)

    # -- queries -----------------------------------------------------------------------------------
    def _build_index(self) -> dict[str, tuple[str, int]]:
        """Upstream's pool lookup for every node at once; nodes it would refuse (two pools, a malformed
        selector or maxUnavailable) are left out."""
        nodes: list[Mapping[str, Any]] = [{"metadata": {"name": n, "labels": labels}}
                                          for n, labels in self._labels.items()]
        membership = PoolMembership(self._pools.values(), nodes)
        index: dict[str, tuple[str, int]] = {}
        for node in nodes:
            try:
                pool = membership.pool_of(node)
                index[_name(node)] = (pool.name, pool.limit())
            except (PoolLookupError, ValueError):
                continue
        return index

    def pool_of(self, node: str) -> tuple[str, int] | None:
        """(pool name, maxUnavailable as a count) of `node`, or None when the cache cannot tell."""
        with self._lock:
            return self._pool_of(node)

    def _pool_of(self, node: str) -> tuple[str, int] | None:
        if self._index is None:
            self._index = self._build_index()
        return self._index.get(node)

    def occupied(self, pool: str) -> int:
        """Nodes of `pool` holding a slot: as the cache shows, plus our grants it does not show yet."""
        with self._lock:
            if self._index is None:
                self._index = self._build_index()
            index = self._index
            return sum(1 for n in self._holders | set(self._granted) if (index.get(n) or ("", 0))[0] == pool)

    def waiting_behind_full_pool(self, node: str) -> bool:
        """The node asks for a drain, holds no slot, and its pool is full: nothing to do until a slot
        frees (whose event wakes it) or the next poll. False whenever unsure."""
        with self._lock:
            desired, current, _rv = self._states.get(node, (None, None, 0))
            if desired not in WAITING_REQUESTS or current != consts.DRAIN_IDLE or node in self._granted:
                return False
            where = self._pool_of(node)
        if where is None or where[1] == consts.UNLIMITED:
            return False
        return self.occupied(where[0]) >= where[1]

    def to_wake(self, freed: str) -> list[str] | None:
        """Who to wake now that `freed` gave its slot back: up to twice as many nodes of its pool waiting for a
        slot as the pool has free slots (in name order), not every waiting node of the cluster, which
        would each read their Node and NodeState live before one of them wins the slot (O(N) requests
        per release, O(N^2) per rollout). `freed` itself is not counted as a holder: this may run
        before the view saw its release. None when unsure (no pool known): then wake every one."""
        with self._lock:
            where = self._pool_of(freed)
            if where is None:
                return None
            pool, limit = where
            index = self._index or {}
            held = sum(1 for n in (self._holders | set(self._granted)) - {freed}
                       if (index.get(n) or ("", 0))[0] == pool)
            free = len(self._states) if limit == consts.UNLIMITED else max(0, limit - held)
            waiting = sorted(n for n in self._waiting.difference(self._granted, (freed,))
                             if (index.get(n) or ("", 0))[0] == pool)
            return waiting[:2 * free]  # twice: a release the view has not seen yet may take one

    def record_grant(self, node: str, resource_version: int) -> None:
        with self._lock:
            _desired, current, rv = self._states.get(node, (None, None, 0))
            if not (occupies_slot(current) and rv >= resource_version):
                self._granted[node] = resource_version
