"""A daemon waiting for its drain slot looks again when what it waits on changes, not every 30 s.

Upstream's daemon runs a full pass on every requeue while the drain controller has not granted its
drain (`handleDrain` answering "wait"): a live GET of its NodeState, a discovery of the host and the
plugins' decision, only to wait again. In a rollout of a large pool most nodes wait for much of it:
two quorum reads a minute on the API server and two discoveries per waiting node, for as long as the
rollout lasts.

What such a pass decides from is the NodeState (its spec and its drain annotations: any change is a
new resourceVersion, which the informer's cache shows, and which enqueues a pass) and the operator
config's `disableDrain` and feature gates. The host decides only whether the change still needs a
drain, and the daemon does not change the host while it waits. So a pass ends at once while the
cached NodeState is one the waiting pass left and the config is the same. "Left" covers each write of
that pass: a pass that asks for its drain writes its status and then its annotation, and the watch
events of both come after it ended; the cache showing the first of them is no news. A full pass still runs
every `REFRESH_REQUEUES` requeue intervals, so the status keeps showing the host and a host that no
longer needs the drain is seen; a lagging or broken watch (no cache) makes every pass a full one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sriovop.daemon.settings import LiveConfig

#: A waiting daemon's full pass at least every this many requeue intervals (5 min with upstream's 30 s).
REFRESH_REQUEUES = 10


def _identity(state: Mapping[str, Any]) -> tuple[str, int, str]:
    meta = state.get("metadata") or {}
    return str(meta.get("uid", "")), int(meta.get("generation") or 0), str(meta.get("resourceVersion", ""))


def _config(live: LiveConfig) -> tuple[bool, tuple[tuple[str, bool], ...]]:
    with live.lock:
        return live.disable_drain, tuple(sorted(live.feature_gates.items()))


@dataclass(frozen=True)
class Waiting:
    """What the last full pass, which ended waiting for the drain controller, decided from."""

    #: The NodeStates that pass read or wrote: (uid, generation, resourceVersion) of each.
    states: frozenset[tuple[str, int, str]]
    config: tuple[bool, tuple[tuple[str, bool], ...]]
    #: When that pass ran (time.monotonic()).
    since: float

    @classmethod
    def after(cls, live: LiveConfig, now: float, decided_from: Mapping[str, Any],
              *written: Mapping[str, Any]) -> Waiting:
        """`decided_from`: the NodeState the pass decided from; `written`: as each of its later writes
        returned it. A write that came back with another spec (a new generation: the operator changed
        it meanwhile) is left out, since the pass did not decide from that spec."""
        base = _identity(decided_from)
        same_spec = {i for i in map(_identity, written) if i[:2] == base[:2]}
        return cls(frozenset({base, *same_spec}), _config(live), now)

    def holds(self, cached: Mapping[str, Any] | None, live: LiveConfig, now: float, refresh_after: float) -> bool:
        """Whether another pass would decide what that one did: a NodeState of that pass in the cache,
        the same config, and the refresh not due yet."""
        if cached is None or now - self.since >= refresh_after:
            return False
        return _identity(cached) in self.states and _config(live) == self.config
