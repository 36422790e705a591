"""The rollout benchmark's audit-log windows: counted by client, verb and resource; a log rotated
inside a window (a new file, smaller or larger) is an error, not a window of no or the wrong requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sriovop.devcluster.audit import audit_args
from sriovop.hollow.worker import DAEMON_USER_AGENT
from test.support.rollout_audit import AuditLog


def line(agent: str, verb: str, resource: str) -> str:
    return json.dumps({"userAgent": agent, "verb": verb, "objectRef": {"resource": resource}}) + "\n"


def rotate(path: Path, lines: str) -> None:
    """What kube-apiserver's log writer does at its size limit: the file is renamed, a new one opened."""
    path.rename(path.with_name(path.name + ".1"))
    path.write_text(lines)


def test_a_window_counts_its_own_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = AuditLog(path, "bench")
    before = log.mark()  # the log does not exist yet
    path.write_text(line("sriovop/op", "get", "nodes"))
    start = log.mark()
    with path.open("a") as f:
        f.write(line(DAEMON_USER_AGENT, "patch", "nodes") + line(DAEMON_USER_AGENT, "patch", "nodes"))
    assert log.count(start, log.mark()) == {("daemons", "patch", "nodes"): 2}
    assert log.count(before, log.mark()) == {("daemons", "patch", "nodes"): 2, ("operator", "get", "nodes"): 1}


@pytest.mark.parametrize("after", [1, 5], ids=["smaller", "larger"])
def test_a_log_rotated_inside_a_window_is_an_error(tmp_path: Path, after: int) -> None:
    path = tmp_path / "audit.log"
    path.write_text(line("sriovop/op", "get", "nodes") * 3)
    log = AuditLog(path, "bench")
    start = log.mark()
    rotate(path, line("sriovop/op", "get", "nodes") * after)
    with pytest.raises(RuntimeError, match="rotated"):
        log.count(start, log.mark())


def test_the_dev_clusters_audit_log_is_not_rotated_at_kube_apiservers_default_100_mb(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n")
    (cluster := tmp_path / "cluster").mkdir()
    sizes = [int(a.split("=", 1)[1]) for a in audit_args(cluster, policy) if a.startswith("--audit-log-maxsize=")]
    assert len(sizes) == 1 and sizes[0] >= 100_000, sizes
