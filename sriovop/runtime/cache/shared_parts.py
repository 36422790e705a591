"""One frozen copy of equal parts of cached objects (hash-consing).

Why: a fleet is built from few server models and rolled out by few policies, so thousands of cached
objects carry equal parts. At 5,000 NodeStates each holds its own owner reference, its own PF list and
its own spec, although a handful of variants exist. Cached objects are frozen, so equal parts can be one
object shared by all of them; a reader cannot tell (FrozenDict/FrozenList compare and serialise as
before), and a writer copies with `thaw` as always.

A part worth sharing is chosen by the cache's transform for its kind (the operator's are in
`sriovop/operator/cache_trim.py`): a part that is unique per object (uids, MACs, per-node names) would
only add a table entry. The table holds a part while any cached object does: parts no object holds any
more are dropped each time the table has doubled since the last sweep, so churn (policy rounds, drain
states) does not grow it.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

from sriovop.runtime.objects import freeze_plain

#: The table is swept when it reaches this size, then when it has doubled since the last sweep.
FIRST_SWEEP = 1024


class SharedParts:
    """`share(part)`: the frozen copy of `part` every equal part shares. Thread-safe: informers of
    several kinds and managers decode at once."""

    def __init__(self) -> None:
        self._by_hash: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._sweep_at = FIRST_SWEEP

    def share(self, part: Any) -> Any:
        """`part` is freshly decoded JSON (a dict or list the caller owns); it is frozen in place.

        The table is keyed by the hash of the part's JSON text in its own key order (the API server
        writes equal objects in one order; sorting the keys cost 60% more), and a hit must compare
        equal. Python's equality does not tell 1 from 1.0 or true, which the texts do, so only two texts
        with the same 64-bit hash and values differing in just that way could share wrongly; any other
        collision only costs a share."""
        digest = hash(json.dumps(part))
        with self._lock:
            known = self._by_hash.get(digest)
            if known is not None and known == part:
                return known
            frozen = freeze_plain(part)
            if known is None:  # on a hash collision the first part keeps the slot
                self._by_hash[digest] = frozen
                if len(self._by_hash) >= self._sweep_at:
                    self._sweep()
            return frozen

    def __len__(self) -> int:
        return len(self._by_hash)

    def _sweep(self) -> None:
        table = self._by_hash
        for digest in list(table):
            if sys.getrefcount(table[digest]) <= 2:  # the table's reference and the call's argument
                del table[digest]
        self._sweep_at = max(FIRST_SWEEP, 2 * len(table))
