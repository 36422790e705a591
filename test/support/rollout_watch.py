"""An independent observer of a rollout: per pool, how many nodes hold a drain slot at once, and
whether every node has reached the target configuration with nothing cordoned.

It follows Nodes (of one hollow fleet) and NodeStates (of the operator namespace) with its own lists
and watches, not the operator's caches, so it checks the operator from outside. A node holds a slot
while its NodeState's `current-state` is Draining or DrainComplete (what the drain controller counts);
each NodeState event updates the count of its pool at that revision, and `max_in_flight[pool]` is the
largest seen. A broken watch (an API server restart) is re-listed; transitions inside the gap are
not seen, which can only lower the maximum, never raise it.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.hollow.fleet import FLEET_LABEL, POOL_LABEL
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError
from sriovop.runtime.kinds import NODE, Kind

SLOT_STATES = (consts.DRAINING, consts.DRAIN_COMPLETE)


def _ann(obj: Mapping[str, Any], key: str) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(key)


def configured(state: Mapping[str, Any], num_vfs: int) -> bool:
    """The NodeState asks for `num_vfs` on every PF in its spec, the daemon reports them applied and
    Succeeded, and the drain handshake is back to Idle on both sides."""
    spec = (state.get("spec") or {}).get("interfaces") or []
    status = state.get("status") or {}
    reported = {i.get("name"): i.get("numVfs") for i in status.get("interfaces") or []}
    return bool(spec) and all(i.get("numVfs") == num_vfs and reported.get(i.get("name")) == num_vfs for i in spec) \
        and status.get("syncStatus") == "Succeeded" \
        and _ann(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE \
        and _ann(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE


def asked_vfs(state: Mapping[str, Any]) -> int | None:
    """The VF count the NodeState's spec asks for on every PF, or None if there is none or they differ."""
    counts = {i.get("numVfs") for i in (state.get("spec") or {}).get("interfaces") or []}
    return counts.pop() if len(counts) == 1 else None


class RolloutWatcher:
    def __init__(self, client: Client, namespace: str, prefix: str) -> None:
        self.client = client
        self.namespace = namespace
        self.prefix = prefix
        self.cond = threading.Condition()
        self.pool: dict[str, str] = {}            # node -> pool label
        self.cordoned: set[str] = set()
        self.states: dict[str, Mapping[str, Any]] = {}
        self.max_in_flight: dict[str, int] = {}
        #: pool -> nodes holding a slot now (kept per event: a recount per event is O(N) at 5,000 nodes).
        self.holders: dict[str, set[str]] = {}
        #: A node seen entering Draining (a slot granted): the perf_counter time, and the VF count its
        #: NodeState asked for then (None if its PFs disagree), which tells a drain for which change.
        self.granted: list[tuple[float, int | None]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._streams: list[Any] = []
        self._threads = [
            threading.Thread(target=self._follow, args=(NODE, None, {FLEET_LABEL: prefix}, self._on_node),
                             name="watch-nodes", daemon=True),
            threading.Thread(target=self._follow, args=(SRIOV_NETWORK_NODE_STATE, namespace, None, self._on_state),
                             name="watch-states", daemon=True)]
        self._synced = [threading.Event(), threading.Event()]

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> RolloutWatcher:
        for t in self._threads:
            t.start()
        for ev in self._synced:
            if not ev.wait(120):
                raise TimeoutError("the rollout watcher's first list did not complete")
        return self

    def stop(self) -> None:
        self._stop.set()
        for s in list(self._streams):
            s.close()
        for t in self._threads:
            t.join(10)

    def _follow(self, kind: Kind, namespace: str | None, labels: dict[str, str] | None,
                handle: Callable[[str, Mapping[str, Any]], None]) -> None:
        synced = self._synced[0 if kind is NODE else 1]
        while not self._stop.is_set():
            try:
                page = self.client.list_page(kind, namespace, label_selector=labels)
                with self.cond:
                    seen = {o["metadata"]["name"] for o in page.items}
                    for gone in [n for n in self._names(kind) if n not in seen]:
                        handle("DELETED", {"metadata": {"name": gone}})
                    for obj in page.items:
                        handle("MODIFIED", obj)
                    self.cond.notify_all()
                synced.set()
                stream = self.client.watch(kind, namespace, label_selector=labels,
                                           resource_version=page.resource_version, timeout_seconds=300)
                self._streams.append(stream)
                try:
                    for etype, obj in stream:
                        if etype in ("BOOKMARK", "ERROR"):
                            if etype == "ERROR":
                                break
                            continue
                        with self.cond:
                            handle(etype, obj)
                            self.cond.notify_all()
                        if self._stop.is_set():
                            return
                finally:
                    self._streams.remove(stream)
                    stream.close()
            except (ApiError, OSError) as exc:
                if self._stop.is_set():
                    return
                self.errors.append(f"{kind.plural}: {exc}")
                time.sleep(0.5)
            except Exception as exc:  # a closed stream while stopping surfaces as anything
                if self._stop.is_set():
                    return
                self.errors.append(f"{kind.plural}: {exc!r}")
                time.sleep(0.5)

    def _names(self, kind: Kind) -> list[str]:
        return list(self.pool) if kind is NODE else list(self.states)

    # -- events (under self.cond) ---------------------------------------------------------------------
    def _on_node(self, etype: str, node: Mapping[str, Any]) -> None:
        name = node["metadata"]["name"]
        if etype == "DELETED":
            # A deleted node frees its slot in the drain controller's count (it is no pool member).
            self.holders.get(self.pool.pop(name, ""), set()).discard(name)
            self.cordoned.discard(name)
            return
        self.pool[name] = ((node["metadata"].get("labels") or {}).get(POOL_LABEL)) or "default"
        if (node.get("spec") or {}).get("unschedulable"):
            self.cordoned.add(name)
        else:
            self.cordoned.discard(name)

    def _on_state(self, etype: str, state: Mapping[str, Any]) -> None:
        name = state["metadata"]["name"]
        pool = self.pool.get(name)
        if pool is None:  # not (or no longer) a fleet node: no member of any pool, holds no slot
            if etype == "DELETED":
                self.states.pop(name, None)
            else:
                self.states[name] = state
            return
        holders = self.holders.setdefault(pool, set())
        if etype == "DELETED":
            self.states.pop(name, None)
            holders.discard(name)
            return
        before = _ann(self.states.get(name) or {}, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
        self.states[name] = state
        current = _ann(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
        if current == consts.DRAINING and before != consts.DRAINING:
            self.granted.append((time.perf_counter(), asked_vfs(state)))
        if current in SLOT_STATES:
            holders.add(name)
        else:
            holders.discard(name)
        self.max_in_flight[pool] = max(self.max_in_flight.get(pool, 0), len(holders))

    # -- queries -----------------------------------------------------------------------------------
    def pending(self, num_vfs: int) -> list[str]:
        """Fleet nodes not yet configured with `num_vfs`, or still cordoned (under the lock)."""
        return sorted(n for n in self.pool if n in self.cordoned or n not in self.states
                      or not configured(self.states[n], num_vfs))

    def wait_configured(self, num_vfs: int, timeout: float, expect: int | None = None) -> float:
        """Block until every fleet node (at least `expect` of them) is configured; the perf_counter
        time at which the watcher saw it (checked every 0.25 s: a check is O(N))."""
        deadline = time.monotonic() + timeout
        while True:
            with self.cond:
                pending = self.pending(num_vfs)
                if not pending and (expect is None or len(self.pool) >= expect):
                    return time.perf_counter()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{len(pending)} of {len(self.pool)} nodes not configured with "
                                       f"{num_vfs} VFs within {timeout:.0f}s, e.g. {pending[:5]}; "
                                       f"cordoned {sorted(self.cordoned)[:5]}")
            time.sleep(0.25)

    def wait_for(self, predicate: Callable[[RolloutWatcher], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"not within {timeout:.0f}s: {what}")
                self.cond.wait(min(left, 5.0))

    def in_flight(self, pool: str) -> list[str]:
        with self.cond:
            return sorted(self.holders.get(pool, set()))

    def first_grant_after(self, t: float, timeout: float, num_vfs: int | None = None) -> float:
        """The first slot granted after perf_counter time `t` (waiting for it), to any node or, with
        `num_vfs`, to a node whose NodeState asks for that many VFs: how long the drain controller took
        to make progress again after a fault, or to start on a change made at `t`."""
        def later() -> float | None:  # grants are appended in time order: skip those before `t` at once
            since = self.granted[bisect.bisect_right(self.granted, t, key=lambda grant: grant[0]):]
            return next((g for g, vfs in since if num_vfs is None or vfs == num_vfs), None)

        what = "a drain slot granted" + (f" for {num_vfs} VFs" if num_vfs is not None else "")
        self.wait_for(lambda _w: later() is not None, timeout, f"{what} after the fault")
        with self.cond:
            found = later()
        assert found is not None  # grants are only ever added
        return found

    def count_configured(self, num_vfs: int) -> int:
        with self.cond:
            return sum(1 for n in self.pool if n in self.states and n not in self.cordoned
                       and configured(self.states[n], num_vfs))

    def reset_max(self) -> None:
        with self.cond:
            self.max_in_flight = {}
