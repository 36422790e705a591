"""`make bench BENCH_ARGS=--quick` as part of the suite: every benchmark runs at its smallest size and
writes valid JSON, summary.json and report.md. It asserts that they ran and what they wrote, never a
timing (benchmarks are not tests). Needs the control plane and the simulated SR-IOV host (the daemon
benchmark's network namespaces), like the integration tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIGURE_KEYS = {"name", "value", "unit", "baseline", "ratio", "target", "pass"}


@pytest.mark.timeout(2400)  # about 5 minutes on a quiet machine; more than 10 under a load average of 40
def test_every_benchmark_runs_quick_and_writes_valid_json(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "test" / "bench" / "run_all.py"), "--quick", "--results",
                           str(tmp_path)], capture_output=True, text=True, timeout=2300, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["quick"] is True and summary["failed_benchmarks"] == {}
    names = {"cli_start", "status_cli", "admission_e2e", "operator_convergence", "runtime_informer", "daemon_steady",
             "hub_filter", "cni_add"}
    for name in names:
        doc = json.loads((run_dir / f"{name}.json").read_text())
        assert doc["benchmark"] == name and doc["figures"], name
        for fig in doc["figures"]:
            assert set(fig) >= FIGURE_KEYS, (name, fig)
            assert isinstance(fig["value"], int | float), (name, fig)
    # every required name is there; the 5,000-node ones are measured at the quick size and say so
    assert summary["missing"] == [], summary["missing"]
    for name in ("admission_p99_added_ms_5000_nodes", "operator_policy_to_nodestates_ratio_5000_nodes",
                 "operator_rss_mb_5000_nodes", "rollout_ratio_5000_nodes", "rollout_requests_per_node_5000_nodes",
                 "webhook_cpu_ms_per_admission_5000_nodes"):
        fig = summary["figures"][name]
        assert fig["quick"] is True and fig["pass"] is None, fig
        assert fig["measured_as"] in summary["figures"] and fig["measured_as"] != name, fig
    report = (run_dir / "report.md").read_text()
    assert "| figure | value | baseline | ratio | target | pass |" in report
    assert "cli_start_ms_over_python_floor" in report
