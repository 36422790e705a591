"""Node selections remembered per nodeSelector while the Node cache does not change.

Every validation selects the nodes of the policy's nodeSelector; at 5,000 nodes that is an index lookup
plus a filter over a few hundred Nodes, about a sixth of a validation's CPU. Policies of one cluster
share few selectors (a pool, a zone, all workers), and the webhook is asked about the same policy more
than once (the mutating and validating calls of one write, a server-side dry run before the apply,
retries), while Nodes change rarely. A selection is kept until the cache's version (its
resourceVersion, which every applied event advances) moves on, so an answer is never older than the
cache it was computed from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Obj = dict[str, Any]
#: Selectors remembered per cache version; beyond it selections are computed and not kept.
MAX_SELECTORS = 1024


class SelectionMemo:
    def __init__(self, max_selectors: int = MAX_SELECTORS) -> None:
        self._lock = threading.Lock()
        self._version: object = None
        self._selections: dict[tuple[tuple[str, str], ...], tuple[Obj, ...]] = {}
        self._max = max_selectors

    def select(self, version: object, selector: Mapping[str, str],
               compute: Callable[[], Iterable[Obj]]) -> tuple[Obj, ...]:
        """`compute()`'s answer for `selector`, from memory when the same selector was answered at the
        same `version`. The caller reads `version` before computing, and its cache applies a change
        before it advances the version, so a kept answer is at least as new as its key says."""
        try:
            key = tuple(sorted(selector.items()))
            hash(key)
        except TypeError:  # a malformed selector (lists as values): the rules reject it; nothing to keep
            return tuple(compute())
        with self._lock:
            if version != self._version:
                self._version, self._selections = version, {}
            hit = self._selections.get(key)
        if hit is not None:
            return hit
        found = tuple(compute())
        with self._lock:
            if version == self._version and len(self._selections) < self._max:
                self._selections[key] = found
        return found
