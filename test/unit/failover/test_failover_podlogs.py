"""Reading the operator's writes from kubelet container logs (CRI format), including files that are
removed (a deleted pod) or renamed (log rotation) after they were found. No host or cluster involved:
the files are written here in a temporary directory laid out as a dev-cluster node's pod-logs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

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


def test_a_pod_directory_removed_while_it_is_listed_does_not_stop_the_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "node-1" / "pod-logs" / "sriov-network-operator_sriov-network-operator-a_uid"
    live = tmp_path / "node-2" / "pod-logs" / "sriov-network-operator_sriov-network-operator-b_uid"
    for pod, rv in ((gone, 20), (live, 21)):
        (pod / "c").mkdir(parents=True)
        (pod / "c" / "0.log").write_text(_cri(_record(rv)))
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        # The kubelet deletes the pod's directory after it was found and before it is listed.
        if str(path).startswith(str(gone)):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    reader = PodLogWrites(tmp_path, "sriov-network-operator", "sriov-network-operator")
    reader.poll()
    assert [w.rv for w in reader.writes()] == [21]
    monkeypatch.setattr(os, "scandir", real_scandir)
    reader.poll()  # the next round reads what the removal hid
    reader.stop()
    assert sorted(w.rv for w in reader.writes()) == [20, 21]
