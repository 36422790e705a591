"""The failover harness's judgement: write-log parsing, overlapping terms by commit order, takeovers."""

from __future__ import annotations

import json

import pytest

from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.render.nad import render_nad
from test.support.failover_analysis import (
    FaultRecord,
    LeaseChange,
    Write,
    freezes,
    outcome,
    overlapping_terms,
    parse_write,
    summarize,
    terms,
    writers_report,
)
from test.support.failover_workload import compare


def w(identity: str, sent: float, rv: int | None, status: str = "200") -> Write:
    return Write(identity, sent, sent + 0.01, "PATCH", "sriovnetworks", "ns", "x", status, rv)


def test_parse_write_reads_the_operator_line_and_ignores_others() -> None:
    line = json.dumps({"verb": "PUT", "resource": "network-attachment-definitions", "namespace": "t",
                       "name": "net-01", "subresource": "", "status": "200", "rv": "812",
                       "identity": "replica-0-1", "manager": "cluster", "sent": 1796015400.5, "event": "write",
                       "level": "info", "timestamp": "2026-11-30T05:10:00.746201Z"})
    parsed = parse_write(line)
    assert parsed is not None
    assert (parsed.identity, parsed.verb, parsed.rv, parsed.ok, parsed.sent) == ("replica-0-1", "PUT", 812, True,
                                                                                1796015400.5)
    assert parse_write('{"event": "manager started"}') is None
    assert parse_write("Traceback (most recent call last): write") is None
    fenced = parse_write(line.replace('"status": "200"', '"status": "fenced"').replace('"rv": "812"', '"rv": ""'))
    assert fenced is not None and not fenced.ok and fenced.rv is None


def test_terms_in_commit_order_do_not_overlap() -> None:
    writes = [w("a", 1.0, 10), w("a", 2.0, 20), w("b", 3.0, 25), w("b", 4.0, 40), w("a", 9.0, None, "fenced")]
    assert overlapping_terms(terms(writes)) == []


def test_a_write_committed_inside_another_term_is_an_overlap_even_if_clocks_say_otherwise() -> None:
    # b's write was *logged* late (a paused process), but the server committed it at rv 30, inside a's term.
    late = Write("b", 0.5, 6.0, "PATCH", "sriovnetworks", "ns", "x", "200", 30)
    writes = [w("a", 1.0, 10), w("a", 2.0, 50), late, w("c", 5.0, 60)]
    pairs = overlapping_terms(terms(writes))
    assert [(x.identity, y.identity) for x, y in pairs] == [("a", "b")]


def test_terms_that_only_share_a_boundary_revision_do_not_overlap() -> None:
    # b's first write changed nothing and answered with rv 20, the object as a last wrote it.
    writes = [w("a", 1.0, 10), w("a", 2.0, 20), w("b", 3.0, 20), w("b", 4.0, 30)]
    assert overlapping_terms(terms(writes)) == []
    writes.append(w("a", 3.5, 21))  # but a commit of a's after b's first is an overlap
    assert [(x.identity, y.identity) for x, y in overlapping_terms(terms(writes))] == [("a", "b")]


def test_a_no_op_answered_with_an_older_revision_is_not_an_overlap() -> None:
    # b took over; its first patch changed nothing and answered rv 12 (the object as it was long ago),
    # although rv 20 had already been answered to a before b sent it.
    writes = [w("a", 1.0, 10), w("a", 2.0, 20), w("b", 3.0, 12), w("b", 4.0, 30)]
    assert overlapping_terms(terms(writes)) == []
    assert [(t.identity, t.first_rv) for t in terms(writes)] == [("a", 10), ("b", 20)]
    # The same answer to a write sent before rv 20 was answered may be a real commit: an overlap.
    writes = [w("a", 1.0, 10), w("b", 1.5, 12), w("a", 2.0, 20), w("b", 4.0, 30)]
    assert [(x.identity, y.identity) for x, y in overlapping_terms(terms(writes))] == [("a", "b")]


def test_failed_writes_do_not_make_a_term() -> None:
    writes = [w("a", 1.0, 10), w("b", 1.5, None, "409"), w("a", 2.0, 20)]
    assert [t.identity for t in terms(writes)] == ["a"]


def test_takeover_is_measured_to_the_new_leaders_first_write() -> None:
    fault = FaultRecord("sigkill_leader", 100.0, victim="a", old_leader="a")
    writes = [w("a", 99.0, 10), w("a", 100.5, 11), w("b", 114.0, 12), w("b", 115.0, 13)]
    changes = [LeaseChange(50.0, "a", 0), LeaseChange(113.9, "b", 1)]
    o = outcome(fault, writes, changes)
    assert o["new_leader"] == "b" and o["took_over"] is True
    assert o["takeover_s"] == 14.0 and o["lease_acquired_s"] == 13.9


def test_a_follower_kill_counts_as_recovered_only_if_the_same_leader_carries_on() -> None:
    fault = FaultRecord("follower_kill", 10.0, victim="c", old_leader="a")
    same = outcome(fault, [w("a", 10.2, 5)], [])
    other = outcome(fault, [w("b", 10.2, 5)], [])
    assert same["took_over"] and not same["leader_changed"]
    assert not other["took_over"] and other["leader_changed"]
    summary = summarize([same, other])
    assert summary["follower_kill"]["count"] == 2 and summary["follower_kill"]["took_over"] == 1


def test_a_resumed_leader_that_wrote_is_counted() -> None:
    fault = FaultRecord("sigstop_leader", 10.0, victim="a", old_leader="a", resumed_at=30.0, victim_exit_code=1)
    o = outcome(fault, [w("a", 5.0, 1), w("b", 25.0, 2), w("a", 30.5, 3)], [])
    assert o["writes_after_resume"] == 1


@pytest.mark.parametrize("kind", ["node_paused", "node_disconnected"])
def test_a_node_paused_or_cut_off_is_a_leader_fault_whose_resumed_leader_must_not_write(kind: str) -> None:
    fault = FaultRecord(kind, 10.0, victim="a", old_leader="a", resumed_at=30.0, victim_exit_code=1)
    o = outcome(fault, [w("a", 5.0, 1), w("b", 24.0, 2), w("a", 30.5, 3)], [LeaseChange(23.5, "b", 1)])
    assert o["took_over"] and o["new_leader"] == "b" and o["takeover_s"] == 14.0
    assert o["writes_after_resume"] == 1
    assert summarize([o])[kind]["writes_after_resume"] == 1


def test_a_killed_node_is_a_leader_fault() -> None:
    o = outcome(FaultRecord("node_killed", 10.0, victim="a", old_leader="a"), [w("a", 9.0, 1), w("b", 24.0, 2)], [])
    assert o["took_over"] and o["new_leader"] == "b" and "writes_after_resume" not in o


def test_compare_finds_wrong_missing_and_orphaned_nads() -> None:
    net = {"metadata": {"name": "n1", "namespace": "op", "uid": "u1"},
           "spec": {"resourceName": "r", "networkNamespace": "t", "vlan": 5}}
    good = render_nad(SRIOV_NETWORK, net, "openshift.io")
    assert compare([net], [good], "t", "openshift.io") == []
    stale = {**good, "spec": {"config": "{}"}}
    assert compare([net], [stale], "t", "openshift.io") == ["n1: NAD does not match the network (generation None)"]
    assert compare([net], [], "t", "openshift.io") == ["n1: no NAD in t"]
    assert compare([], [good], "t", "openshift.io") == ["n1: NAD left behind after its network was deleted"]


def test_an_overlap_of_writes_checked_before_a_freeze_is_listed_apart_and_any_later_write_counts() -> None:
    # a leads, is frozen at t=10 with one write past its fence check; b takes over; a's write lands
    # inside b's term after the resume at t=25 (and is logged then).
    held = Write("a", 9.9, 25.1, "PATCH", "sriovnetworks", "ns", "x", "200", 30)
    writes = [w("a", 5.0, 10), held, w("b", 20.0, 20), w("b", 21.0, 40)]
    strict = writers_report(writes)
    assert strict["overlapping_writer_intervals"] == 1
    frozen = writers_report(writes, {"a": 10.0})
    assert frozen["overlapping_writer_intervals"] == 0 and frozen["overlaps"] == []
    assert frozen["overlaps_checked_before_a_freeze"] == [
        {"a": "a", "a_rv": [10, 30], "b": "b", "b_rv": [20, 40], "frozen_at": 10.0, "a_writes_inside_b": [
            {"sent": 9.9, "done": 25.1, "rv": 30, "verb": "PATCH", "resource": "sriovnetworks", "name": "x"}]}]
    # A write of a's sent after the freeze (after its resume) is a real overlap.
    late = writers_report([*writes, w("a", 25.2, 45)], {"a": 10.0})
    assert late["overlapping_writer_intervals"] == 1 and late["overlaps_checked_before_a_freeze"] == []
    assert [(o["a"], o["a_rv"], o["b_rv"], [x["sent"] for x in o["a_writes_inside_b"]]) for o in late["overlaps"]] == [
        ("a", [10, 45], [20, 40], [9.9, 25.2])]
    # So is an overlap by a replica that was never frozen.
    assert writers_report(writes, {"b": 10.0})["overlapping_writer_intervals"] == 1


def test_the_faults_that_can_hold_a_checked_write_are_the_freezes_and_cut_offs() -> None:
    outcomes = [outcome(FaultRecord(kind, 10.0 + i, victim=f"v{i}", old_leader=f"l{i}"), [], [])
                for i, kind in enumerate(("sigstop_leader", "sigkill_leader", "node_lost", "follower_kill"))]
    assert freezes(outcomes) == {"l0": 10.0, "l2": 12.0}
