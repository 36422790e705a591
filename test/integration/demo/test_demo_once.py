"""`sriovop demo --once`: converges on two simulated nodes, prints the status, leaves nothing behind."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from pyroute2 import netns


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def test_demo_once_converges_and_cleans_up(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    run = subprocess.run(
        [sys.executable, "-m", "sriovop.cli", "demo", "--once", "--dir", str(directory), "--timeout", "240"],
        capture_output=True, text=True, timeout=420,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "every node reports Succeeded; NetworkAttachmentDefinition default/demo-net rendered" in out
    lines = out.splitlines()
    assert "NODE demo-worker-1  sync=Succeeded  drain=Idle" in lines
    assert "NODE demo-worker-2  sync=Succeeded  drain=Idle" in lines
    pf_rows = [re.match(r"\s+(ens1f\d)\s.*\s(\d+/\d+)\s+(\d+)\s+ETH up", line) for line in lines
               if line.startswith("  ens1f")]
    # XXV710 (64 VFs per PF) on worker 1, E810 (128) on worker 2; the policy asks 8 VFs at MTU 9000.
    assert [m.groups() if m else None for m in pf_rows] == [
        ("ens1f0", "8/64", "9000"), ("ens1f1", "8/64", "9000"),
        ("ens1f0", "8/128", "9000"), ("ens1f1", "8/128", "9000"),
    ]
    assert "export KUBECONFIG=" in out and "stopping ..." in out
    assert _processes_mentioning(str(directory)) == []
    namespaces = set(netns.listnetns())
    for log in (directory / "logs").glob("sim-*.log"):
        described = json.loads(log.read_text().splitlines()[0])
        assert described["netns"] not in namespaces
