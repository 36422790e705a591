"""The failover harness in its quick mode: real replicas, real faults, a private control plane.

Runs `hack/failover.py --quick` (one fault of each type with a 4/3/0.5 s lease) and checks the
correctness figures of its JSON report; the timing figures are for `make failover` to report, not for
a test to assert.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
FAULT_TYPES = {"sigterm_leader", "sigkill_leader", "sigstop_leader", "apiserver_restart", "follower_kill"}


def run_quick(tmp_path: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(REPO / "hack" / "failover.py"), "--quick",
                           "--log-dir", str(tmp_path / "logs")],
                          cwd=REPO, capture_output=True, text=True, timeout=480)
    assert proc.stdout.strip(), f"no report (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(proc.stdout)
    report["_exit_code"] = proc.returncode
    report["_stderr"] = proc.stderr
    return report


def test_quick_failover_has_no_overlap_no_lost_change_and_a_takeover_per_fault(tmp_path: Path) -> None:
    report = run_quick(tmp_path)
    context = report["_stderr"][-3000:]

    assert report["overlapping_writer_intervals"] == 0, report["overlaps"]
    assert report["all_changes_in_nads"], report["lost_changes"]
    assert report["lost_changes"] == []

    takeover = report["takeover"]
    assert set(takeover) == FAULT_TYPES, context
    for kind, figures in takeover.items():
        assert figures["count"] >= 1, kind
        assert figures["took_over"] == figures["count"], (kind, figures, context)
        assert figures["takeover_median_s"] is not None, (kind, figures)

    # The leader faults hand the lease to another replica; killing a follower leaves the leader alone.
    for fault in report["faults"]:
        if fault["fault"] in ("sigterm_leader", "sigkill_leader", "sigstop_leader"):
            assert fault["new_leader"] not in (None, fault["old_leader"]), fault
    assert takeover["follower_kill"]["leader_changed"] == 0

    # The paused leader, once resumed, exits non-zero having lost the election and never writes again.
    assert takeover["sigstop_leader"]["writes_after_resume"] == 0
    assert takeover["sigstop_leader"]["victims_exited_nonzero"] == takeover["sigstop_leader"]["count"]
    for fault in report["faults"]:
        if fault["fault"] == "sigstop_leader":
            assert fault["victim_lost_election"] is True, fault
        if fault["fault"] == "sigterm_leader":
            assert fault["victim_exit_code"] == 0, fault  # a graceful handover is a clean exit

    # The workload really changed things while the faults happened.
    assert report["workload"].get("create", 0) > 0 and report["workload"].get("update", 0) > 0
    assert report["writes"]["ok"] > 0
    assert report["targets"]["zero_overlapping_writers"] and report["targets"]["zero_lost_changes"]
    assert report["_exit_code"] == 0, context
