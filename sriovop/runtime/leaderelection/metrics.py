"""controller-runtime's leader-election metrics (metrics/leaderelection.go)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
    "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    ("name",),
)
SLOWPATH = Counter(
    "leader_election_slowpath",
    "Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
    "identify the lease. Please make sure to group by name.",
    ("name",),
)
