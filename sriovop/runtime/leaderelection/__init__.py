"""Lease-based leader election (client-go tools/leaderelection) with a Lease watch and write fencing.

    from sriovop.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock
"""

from sriovop.runtime.leaderelection.config import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR,
    LeaderElectionConfig,
    default_identity,
)
from sriovop.runtime.leaderelection.elector import LeaderElector, NotLeaderError
from sriovop.runtime.leaderelection.leaselock import LeaseLock, LockNotInitialized, ResourceLock, WatchHandle
from sriovop.runtime.leaderelection.record import (
    LeaderElectionRecord,
    format_micro_time,
    parse_micro_time,
)

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "LockNotInitialized",
    "NotLeaderError",
    "ResourceLock",
    "WatchHandle",
    "default_identity",
    "format_micro_time",
    "parse_micro_time",
]
