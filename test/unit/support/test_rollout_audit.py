"""The rollout benchmark's audit-log windows: counted by client, verb and resource; a log that shrank
inside a window (rotated) is an error, not a window with no requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sriovop.devcluster.audit import audit_args
from sriovop.hollow.worker import DAEMON_USER_AGENT
from test.support.rollout_audit import AuditLog


def line(agent: str, verb: str, resource: str) -> str:
    return json.dumps({"userAgent": agent, "verb": verb, "objectRef": {"resource": resource}}) + "\n"


def test_a_window_counts_its_own_lines_and_a_shrunk_log_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text(line("sriovop/op", "get", "nodes"))
    log = AuditLog(path, "bench")
    start = log.offset()
    with path.open("a") as f:
        f.write(line(DAEMON_USER_AGENT, "patch", "nodes") + line(DAEMON_USER_AGENT, "patch", "nodes"))
    assert log.count(start, log.offset()) == {("daemons", "patch", "nodes"): 2}
    end = log.offset()
    path.write_text(line("sriovop/op", "get", "nodes"))  # what a rotation leaves
    with pytest.raises(RuntimeError, match="rotated"):
        log.count(end, log.offset())


def test_the_dev_clusters_audit_log_is_not_rotated_at_kube_apiservers_default_100_mb(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n")
    (cluster := tmp_path / "cluster").mkdir()
    sizes = [int(a.split("=", 1)[1]) for a in audit_args(cluster, policy) if a.startswith("--audit-log-maxsize=")]
    assert len(sizes) == 1 and sizes[0] >= 100_000, sizes
