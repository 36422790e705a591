"""In-cluster proofs: a drain of real pods guarded by a real PDB, and RBAC (no denial in the audit log).

Cluster: `sriovop dev cluster up --nodes 2` with the operator installed by `kubectl apply -k` (see
test/support/incluster.py). Host: the SIMULATED SR-IOV host managed by the config-daemon pod of
sriovop-node-2 (the worker); sriovop-node-1 is the schedulable control-plane node.
"""

from __future__ import annotations

import pytest

from sriovop.controllers.drain.states import DRAIN_BLOCKED_BY_ANNOTATION
from test.support.incluster import AUDITED_USERS, CONTROL_PLANE_NODE, WORKER_NODE, Installed
from test.support.incluster_drain import DrainRecord, run_drain_flow
from test.support.rbac_audit import AuditLog


@pytest.fixture(scope="package")
def drained(installed: Installed) -> DrainRecord:
    return run_drain_flow(installed)


def test_drain_evicts_real_pods_guarded_by_a_pdb_and_uncordons(drained: DrainRecord) -> None:
    assert set(drained.pods_before.values()) == {WORKER_NODE}, drained.pods_before
    # The PDB's status is the disruption controller's: it saw both pods healthy and allows nothing.
    assert drained.pdb_status["disruptionsAllowed"] == 0 and drained.pdb_status["expectedPods"] == 2
    # A blocking PDB is surfaced with the pod's name on the NodeState and in an Event.
    blocker_pod = drained.blocked_annotation.split(":")[0]
    assert blocker_pod in {f"{drained.namespace}/{name}" for name in drained.pods_before}, drained.blocked_annotation
    assert "disruption budget" in drained.blocked_annotation
    assert any(blocker_pod in message for message in drained.blocked_events), drained.blocked_events
    assert drained.unschedulable_while_blocked
    assert drained.pods_while_blocked == drained.pods_before  # nothing evicted while the PDB blocks
    # After the PDB is relaxed: replacements run on the other node, the node is uncordoned, the
    # simulated PF has its new VF count and the blocker is no longer reported.
    assert set(drained.pods_after.values()) == {CONTROL_PLANE_NODE}, drained.pods_after
    assert not drained.node_after["spec"].get("unschedulable")
    assert DRAIN_BLOCKED_BY_ANNOTATION not in (drained.state_after["metadata"].get("annotations") or {})


def test_audit_log_shows_no_denial_for_any_component(installed: Installed, drained: DrainRecord) -> None:
    log = AuditLog.read(installed.audit_log, AUDITED_USERS)
    users = {r.access.user for r in log.requests}
    # Every component took part: operator, webhooks, daemon and device plugin all made requests.
    assert users == set(AUDITED_USERS), sorted(set(AUDITED_USERS) - users)
    denied = [f"{r.access.user}: {r.access.describe()} ({r.decision}, {r.code})"
              for r in log.requests if not r.implied and r.decision != "allow"]
    assert denied == []
    assert not [r for r in log.requests if r.code == 403]
