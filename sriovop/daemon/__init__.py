"""The node side: the NodeState reconcile loop (`sriovop config-daemon`).

Public API: `Daemon` (process wiring), `DaemonSettings`, `NodeStateReconciler` (one pass of upstream's
reconcile loop), `AppliedGeneration` (the last applied generation, persisted on the host),
`decide_drain` (the drain handshake as a pure function), `StatusWriter`, `VfStatsCollector`.
"""

from sriovop.daemon.generation import AppliedGeneration
from sriovop.daemon.handshake import DrainAction, DrainStep, decide_drain
from sriovop.daemon.settings import DaemonSettings, LiveConfig, default_host_root

__all__ = [
    "AppliedGeneration", "DaemonSettings", "DrainAction", "DrainStep", "LiveConfig", "decide_drain",
    "default_host_root",
]
