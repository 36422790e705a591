"""Pure analysis for the failover harness: replicas' write logs, leadership changes, fault outcomes.

The operator logs every write attempt as a JSON line `event="write"` (sriovop/operator/fencing.py) with
the resourceVersion the server answered. resourceVersions of one etcd are its revisions: a single
global commit order across all objects. Each replica incarnation leads at most once (losing the lease
ends the process), so its successful writes form one term; two terms "overlap" when their revision
ranges intersect, i.e. the server committed a write of one leader between two writes of another. That
is judged by the server's order, not by clocks, so a paused process whose response was logged late
cannot fake an overlap, and a real interleaving cannot hide.
"""

from __future__ import annotations

import bisect
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Write:
    identity: str
    sent: float  # wall-clock time the request was sent
    done: float  # wall-clock time the line was logged (after the answer)
    verb: str
    resource: str
    namespace: str
    name: str
    status: str
    rv: int | None

    @property
    def ok(self) -> bool:
        return self.status.startswith("2")


def _timestamp(value: Any) -> float:
    if not value:
        return 0.0
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def parse_write(line: str) -> Write | None:
    """One log line → a Write, or None for any other line (including non-JSON noise)."""
    if '"write"' not in line:
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict) or rec.get("event") != "write":
        return None
    rv_raw = str(rec.get("rv") or "")
    return Write(
        identity=str(rec.get("identity") or ""), sent=float(rec.get("sent") or 0.0),
        done=_timestamp(rec.get("timestamp")) or float(rec.get("sent") or 0.0), verb=str(rec.get("verb") or ""),
        resource=str(rec.get("resource") or ""), namespace=str(rec.get("namespace") or ""),
        name=str(rec.get("name") or ""), status=str(rec.get("status") or ""),
        rv=int(rv_raw) if rv_raw.isdigit() else None,
    )


def parse_writes(lines: Iterable[str]) -> list[Write]:
    return [w for w in (parse_write(line) for line in lines) if w is not None]


@dataclass(frozen=True)
class Term:
    """The successful writes of one identity: revision range and send-time range."""

    identity: str
    first_rv: int
    last_rv: int
    first_sent: float
    last_sent: float
    writes: int


def in_commit_order(writes: Iterable[Write]) -> list[Write]:
    """The successful writes, each with the revision it takes its place at in the server's order.

    A write that committed nothing (a patch whose result equals the object) answers with the object's
    current resourceVersion, which can be far older than the newest revision: a new leader's first
    no-op patch would then fall inside the old leader's range and look like an overlap. Revisions grow
    with real time, so such a write happened no earlier than the highest revision answered before it was
    sent (all writers log with this machine's clock): that is its place. A real commit's revision is
    always above that bound, so its place is its own revision and a real interleaving still shows.
    """
    ok = [w for w in writes if w.ok and w.rv is not None]
    answered = sorted(ok, key=lambda w: w.done)
    done_at = [w.done for w in answered]
    highest: list[int] = []
    for w in answered:
        highest.append(max(highest[-1] if highest else 0, w.rv or 0))
    out = []
    for w in ok:
        before = bisect.bisect_left(done_at, w.sent)  # answers logged strictly before w was sent
        bound = highest[before - 1] if before else 0
        out.append(w if (w.rv or 0) > bound else replace(w, rv=bound))
    return out


def terms(writes: Iterable[Write]) -> list[Term]:
    by_id: dict[str, list[Write]] = {}
    for w in in_commit_order(writes):
        by_id.setdefault(w.identity, []).append(w)
    out = []
    for identity, ws in by_id.items():
        rvs = [w.rv for w in ws if w.rv is not None]
        out.append(Term(identity, min(rvs), max(rvs), min(w.sent for w in ws), max(w.sent for w in ws), len(ws)))
    return sorted(out, key=lambda t: t.first_rv)


def overlapping_terms(ts: Sequence[Term]) -> list[tuple[Term, Term]]:
    """Every pair of identities whose revision ranges intersect (two leaders writing in one interval).

    Ranges that only touch (one term's last revision is the other's first) do not intersect: two
    commits never share a revision, so one of those two writes committed nothing (a patch that changed
    nothing answers with the object's current resourceVersion, which the other leader had just written).
    """
    ordered = sorted(ts, key=lambda t: t.first_rv)
    out = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b.first_rv >= a.last_rv:
                break
            out.append((a, b))
    return out


@dataclass(frozen=True)
class LeaseChange:
    at: float
    holder: str
    transitions: int


def holder_at(changes: Sequence[LeaseChange], at: float) -> str:
    holder = ""
    for c in changes:
        if c.at > at:
            break
        holder = c.holder
    return holder


def first_acquire_after(changes: Sequence[LeaseChange], at: float, excluded: Iterable[str]) -> LeaseChange | None:
    skip = set(excluded) | {""}
    return next((c for c in changes if c.at >= at and c.holder not in skip), None)


def first_write_after(writes: Iterable[Write], at: float, excluded: Iterable[str] = (),
                      only: str | None = None) -> Write | None:
    """The earliest successful write sent at or after `at` by someone not excluded (or by `only`)."""
    skip = set(excluded)
    best: Write | None = None
    for w in writes:
        if not w.ok or w.sent < at or w.identity in skip or (only is not None and w.identity != only):
            continue
        if best is None or w.sent < best.sent:
            best = w
    return best


@dataclass
class FaultRecord:
    kind: str
    at: float
    victim: str = ""
    old_leader: str = ""
    resumed_at: float | None = None
    apiserver_back_at: float | None = None
    victim_exit_code: int | None = None
    victim_lost_election: bool | None = None
    notes: list[str] = field(default_factory=list)


#: The process harness's kinds, then the in-cluster ones (test/support/failover_incluster.py), then the
#: kind ones (hack/kind/failover_matrix.py).
LEADER_FAULTS = ("sigterm_leader", "sigkill_leader", "sigstop_leader", "delete_pod", "sigkill_container", "node_lost",
                 "node_killed", "node_paused", "node_disconnected")
#: Faults after which the old leader runs again past its lease: it must not write once resumed.
RESUMED_FAULTS = ("sigstop_leader", "node_paused", "node_disconnected")
#: Faults that can hold a write of the leader's that already passed its fence check until the leader
#: runs (or reaches the server) again: its process or node frozen, or its node cut off.
HOLDING_FAULTS = ("sigstop_leader", "node_paused", "node_disconnected", "node_lost")


def freezes(outcomes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """identity -> when a holding fault hit it, from the faults' outcomes (for `writers_report`)."""
    return {str(o["old_leader"]): float(o["at"]) for o in outcomes
            if o.get("fault") in HOLDING_FAULTS and o.get("old_leader") and o.get("at") is not None}


def outcome(fault: FaultRecord, writes: Sequence[Write], changes: Sequence[LeaseChange]) -> dict[str, Any]:
    """Takeover figures for one fault: who leads afterwards, when the Lease said so, and when that
    leader first wrote (the new leader's first reconcile that changed something)."""
    out: dict[str, Any] = {"fault": fault.kind, "at": round(fault.at, 3), "victim": fault.victim,
                           "old_leader": fault.old_leader}
    if fault.kind in LEADER_FAULTS:
        acquired = first_acquire_after(changes, fault.at, [fault.old_leader])
        first = first_write_after(writes, fault.at, excluded=[fault.old_leader])
        out["new_leader"] = first.identity if first else None
        out["lease_acquired_s"] = round(acquired.at - fault.at, 3) if acquired else None
        out["takeover_s"] = round(first.sent - fault.at, 3) if first else None
        out["took_over"] = first is not None
    elif fault.kind == "apiserver_restart":
        back = fault.apiserver_back_at or fault.at
        first = first_write_after(writes, back)
        out["new_leader"] = first.identity if first else None
        out["leader_changed"] = bool(first and first.identity != fault.old_leader)
        out["apiserver_down_s"] = round(back - fault.at, 3)
        out["takeover_s"] = round(first.sent - fault.at, 3) if first else None
        out["took_over"] = first is not None
    else:  # a follower killed: the leader must simply carry on
        first = first_write_after(writes, fault.at)
        out["new_leader"] = first.identity if first else None
        out["leader_changed"] = bool(first and first.identity != fault.old_leader)
        out["takeover_s"] = round(first.sent - fault.at, 3) if first else None
        out["took_over"] = first is not None and first.identity == fault.old_leader
    if fault.kind in RESUMED_FAULTS and fault.resumed_at is not None:
        late = [w for w in writes if w.identity == fault.old_leader and w.ok and w.sent >= fault.resumed_at]
        out["writes_after_resume"] = len(late)
        out["victim_exit_code"] = fault.victim_exit_code
        out["victim_lost_election"] = fault.victim_lost_election
    elif fault.victim_exit_code is not None:
        out["victim_exit_code"] = fault.victim_exit_code
    if fault.notes:
        out["notes"] = list(fault.notes)
    return out


def summarize(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per fault type: count, takeovers, median/max of takeover and lease-acquired times."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for o in outcomes:
        by_kind.setdefault(str(o["fault"]), []).append(o)
    out: dict[str, dict[str, Any]] = {}
    for kind, items in by_kind.items():
        times = [float(o["takeover_s"]) for o in items if o.get("takeover_s") is not None]
        acquired = [float(o["lease_acquired_s"]) for o in items if o.get("lease_acquired_s") is not None]
        entry: dict[str, Any] = {
            "count": len(items), "took_over": sum(1 for o in items if o.get("took_over")),
            "takeover_median_s": round(statistics.median(times), 3) if times else None,
            "takeover_max_s": round(max(times), 3) if times else None,
        }
        if acquired:
            entry["lease_acquired_median_s"] = round(statistics.median(acquired), 3)
            entry["lease_acquired_max_s"] = round(max(acquired), 3)
        if kind in ("apiserver_restart", "follower_kill"):
            entry["leader_changed"] = sum(1 for o in items if o.get("leader_changed"))
        if kind in RESUMED_FAULTS:
            entry["writes_after_resume"] = sum(int(o.get("writes_after_resume") or 0) for o in items)
            entry["victims_exited_nonzero"] = sum(1 for o in items if (o.get("victim_exit_code") or 0) != 0)
        out[kind] = entry
    return out


def checked_before_a_freeze(committed: Sequence[Write], a: Term, b: Term, freezes: Mapping[str, float]) -> bool:
    """Whether every write of `a` that the server committed inside `b`'s term passed its fence check
    before `a` was frozen or cut off (at `freezes[a]`). `committed`: the writes `in_commit_order`.

    A write's `sent` is taken right before the fence check, so such a write was checked while `a`'s
    lease was fresh; the freeze then held it between the check and the socket, and it reached the server
    after the resume, when another replica led. No client-side check can refuse a write that is already
    past it (Kubernetes offers no fencing token for writes; upstream's leader election has the same
    limit). Every write of `a` sent after the freeze is still counted, and must have been refused."""
    frozen = freezes.get(a.identity)
    if frozen is None:
        return False
    late = writes_inside(committed, a, b)
    return bool(late) and all(w.sent < frozen for w in late)


def writes_inside(committed: Sequence[Write], a: Term, b: Term) -> list[Write]:
    """The writes of `a` the server committed inside `b`'s term (after b's first write), from the writes
    `in_commit_order`."""
    return [w for w in committed if w.identity == a.identity and (w.rv or 0) > b.first_rv]


def _overlap(committed: Sequence[Write], a: Term, b: Term) -> dict[str, Any]:
    """One overlapping pair as the report shows it, with the writes that made it (what a reader of a
    failed run needs: when each was sent, against the faults' times)."""
    return {"a": a.identity, "a_rv": [a.first_rv, a.last_rv], "b": b.identity, "b_rv": [b.first_rv, b.last_rv],
            "a_writes_inside_b": [{"sent": w.sent, "done": w.done, "rv": w.rv, "verb": w.verb,
                                   "resource": w.resource, "name": w.name} for w in writes_inside(committed, a, b)[:5]]}


def writers_report(writes: Sequence[Write], freezes: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The writer part of hack/failover.py's report: terms, overlapping pairs, write counts.

    `freezes` (identity -> when it was frozen or cut off): an overlap made only of such a replica's writes
    that passed their fence check before the freeze is listed apart (`overlaps_checked_before_a_freeze`)
    and not counted in `overlapping_writer_intervals` (`checked_before_a_freeze` says why)."""
    freezes = freezes or {}
    committed = in_commit_order(writes)  # once, for every pair below
    term_list = terms(writes)
    pairs = overlapping_terms(term_list)
    frozen = [(a, b) for a, b in pairs if checked_before_a_freeze(committed, a, b, freezes)]
    overlaps = [pair for pair in pairs if pair not in frozen]
    return {
        "overlapping_writer_intervals": len(overlaps),
        "overlaps": [_overlap(committed, a, b) for a, b in overlaps],
        "overlaps_checked_before_a_freeze": [
            {**_overlap(committed, a, b), "frozen_at": freezes[a.identity]} for a, b in frozen],
        "terms": [{"identity": t.identity, "writes": t.writes, "rv": [t.first_rv, t.last_rv]} for t in term_list],
        "writes": {"ok": sum(1 for w in writes if w.ok), "fenced": sum(1 for w in writes if w.status == "fenced"),
                   "failed": sum(1 for w in writes if not w.ok and w.status != "fenced")},
    }
