"""Drain controller: the node drain handshake with the config daemon, bounded by pool capacity.

- `states`: the annotation state machine as a pure decision table;
- `pods`: which pods a partial or full drain evicts;
- `drainer`: cordon, evictions through the Eviction API (PDBs respected), timeout and retries;
- `controller`: `DrainReconciler(...).setup(manager)`.
"""

from sriovop.controllers.drain.controller import DrainReconciler
from sriovop.controllers.drain.drainer import Blocker, Drainer, DrainFailed, DrainStopped
from sriovop.controllers.drain.states import DRAIN_BLOCKED_BY_ANNOTATION

__all__ = ["DRAIN_BLOCKED_BY_ANNOTATION", "Blocker", "DrainFailed", "DrainReconciler", "DrainStopped", "Drainer"]
