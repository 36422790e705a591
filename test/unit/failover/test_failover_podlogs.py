"""Reading the operator's writes from kubelet container logs (CRI format), including files that are
removed (a deleted pod) or renamed (log rotation) after they were found. No host or cluster involved:
the files are written here in a temporary directory laid out as a dev-cluster node's pod-logs."""

from __future__ import annotations

import json
from pathlib import Path

from test.support.failover_podlogs import PodLogWrites, cri_message


def _record(rv: int, identity: str = "op-1_abc") -> str:
    return json.dumps({"verb": "PATCH", "resource": "sriovnetworks", "namespace": "ns", "name": "n",
                       "subresource": "", "status": "200", "rv": str(rv), "identity": identity,
                       "manager": "cluster", "sent": 100.0 + rv, "event": "write", "level": "info",
                       "timestamp": "2026-12-01T18:00:00Z"})


def _cri(text: str, tag: str = "F") -> str:
    return f"2026-12-01T18:00:00.000000000Z stdout {tag} {text}\n"


def test_cri_message_joins_partial_lines_and_ignores_noise() -> None:
    assert cri_message(_cri("hello", "P")) == ("hello", False)
    assert cri_message(_cri("world")) == ("world", True)
    assert cri_message("garbage\n") == ("", True)


def test_writes_are_read_from_every_node_even_after_the_file_is_gone(tmp_path: Path) -> None:
    log = tmp_path / "node-1" / "pod-logs" / "sriov-network-operator_sriov-network-operator-x_uid" / "c" / "0.log"
    log.parent.mkdir(parents=True)
    other = tmp_path / "node-2" / "pod-logs" / "sriov-network-operator_operator-webhook-y_uid" / "c" / "0.log"
    other.parent.mkdir(parents=True)
    other.write_text(_cri(_record(99, "webhook")))  # not an operator pod: not read
    rec = _record(11)
    log.write_text(_cri(_record(10)) + _cri(rec[:20], "P"))
    reader = PodLogWrites(tmp_path, "sriov-network-operator", "sriov-network-operator")
    reader.poll()
    assert [w.rv for w in reader.writes()] == [10]  # the second record is not complete yet
    with log.open("a") as f:
        f.write(_cri(rec[20:]) + '2026-12-01T18:00:00.000000000Z stdout F {"event": "wri')  # a line mid-write
    log.unlink()  # the kubelet removed the deleted pod's directory
    reader.poll()
    assert [w.rv for w in reader.writes()] == [10, 11]
    renamed = log.with_name("1.log")
    renamed.write_text(_cri(_record(12)))
    reader.poll()
    reader.stop()
    assert [(w.identity, w.rv) for w in reader.writes()] == [("op-1_abc", 10), ("op-1_abc", 11), ("op-1_abc", 12)]
