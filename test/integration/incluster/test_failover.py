"""Failover as users cause it, on the installed cluster: `kubectl delete pod` of the leader, SIGKILL of
the leader's container (`crictl stop -t 0`), SIGSTOP of the leader's process past the lease, the
leader's kubelet stopped, and the leader's node lost (kubelet and every container of the node stopped).

Cluster: `sriovop dev cluster up --nodes 2` with the operator installed by `kubectl apply -k` (see
test/support/incluster.py). Host: this machine, where the dev cluster's kubelets and containers run
(the node faults SIGSTOP and SIGCONT them); no SR-IOV host, simulated or QEMU, is involved. The harness
(test/support/failover_incluster.py) records the Lease, every write of every operator process (from the
container logs) and a workload of SriovNetwork changes. Shorter leader-election timings than the shipped
15/10/2 s keep the test short: they are patched into the Deployment here and the original args are
restored afterwards. The test runs fewer faults than `make failover FAILOVER_ARGS=--cluster` (≥ 5 of
each kind, hack/README-failover.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest

from test.support.failover_incluster import ClusterFailover, Timings, operator_args, set_operator_args, with_timings
from test.support.incluster import Installed

#: Generous for a loaded machine: when this test runs alone it also pays the package's install (4-5 min
#: at a load of ~40), then two rollouts and ~3 min of faults; at a load of ~50 with two CPU hogs the
#: default 600 s was not enough.
pytestmark = pytest.mark.timeout(1800)

TIMINGS = Timings(lease=6.0, renew=4.0, retry=1.0)
#: Each kind at least once (every kind's takeover path is exercised); `make failover --cluster` does ≥ 5.
RUNS = {"delete_pod": 2, "sigkill_container": 2, "sigstop_leader": 2, "kubelet_stopped": 1, "node_lost": 1}


@pytest.fixture
def short_lease(installed: Installed) -> Iterator[Installed]:
    before = set_operator_args(installed, with_timings(operator_args(installed), TIMINGS))
    try:
        yield installed
    finally:
        set_operator_args(installed, before)


def test_leader_failover_as_users_cause_it(short_lease: Installed) -> None:
    harness = ClusterFailover(short_lease, TIMINGS, progress=lambda m: print(m, file=sys.stderr, flush=True))
    harness.start()
    try:
        for kind, count in RUNS.items():
            for _ in range(count):
                harness.inject(kind)
        report = harness.finish()
    finally:
        harness.stop()
    print(json.dumps(report, indent=2))
    faults = report["faults"]
    assert [f["fault"] for f in faults] == [k for k, n in RUNS.items() for _ in range(n)]
    assert report["overlapping_writer_intervals"] == 0, report["overlaps"]
    assert report["all_changes_in_nads"], report["lost_changes"]
    for f in faults:
        assert f["overlapping_writers"] == 0 and f["lost_changes"] == 0, f
        if f["fault"] == "kubelet_stopped":
            # The leader's container keeps running and leading: no takeover, nobody else writes, and
            # once the kubelet is back there are still three pods under the same leader.
            assert f["takeover_s"] is None and f["takeover_reason"], f
            assert not f["leader_changed"] and f["writes_by_others_during_fault"] == 0, f
            assert f["leader_wrote_while_not_ready"] and f["marker_rendered_while_not_ready_s"] is not None, f
            assert f["operator_pods_after"] == 3 and f["leader_after"] == f["old_leader"], f
        elif f["fault"] == "node_lost" and f["replicas_on_other_nodes"] == 0:
            assert f["takeover_s"] is None and f["takeover_reason"], f
        else:
            assert f["took_over"] and f["new_leader"] not in (None, f["old_leader"]), f
            assert f["takeover_s"] is not None and f["takeover_s"] > 0, f
    for f in faults:
        if f["fault"] == "sigstop_leader":
            assert f["writes_after_resume"] == 0, f
