"""`sriovop dev cluster up/down`: a usable kubeconfig, and no process left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sriovop.devcluster import process


def _sriovop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sriovop.cli", *args], capture_output=True, text=True, timeout=180
    )


def test_up_kubectl_down(tmp_path: Path) -> None:
    directory = tmp_path / "cluster"
    up = _sriovop("dev", "cluster", "up", "--dir", str(directory))
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == f"export KUBECONFIG={directory}/kubeconfig"
    supervisor = int((directory / "supervisor.pid").read_text())
    children = [int(p) for p in json.loads((directory / "state.json").read_text())["pids"].values()]
    try:
        kubectl = shutil.which("kubectl", path=os.path.dirname(sys.executable)) or "kubectl"
        out = subprocess.run(
            [kubectl, "get", "ns", "-o", "name"], capture_output=True, text=True, timeout=60,
            env=dict(os.environ, KUBECONFIG=str(directory / "kubeconfig")),
        )
        assert out.returncode == 0, out.stderr
        assert "namespace/kube-system" in out.stdout.split()
        again = _sriovop("dev", "cluster", "up", "--dir", str(directory))
        assert again.returncode == 0 and int((directory / "supervisor.pid").read_text()) == supervisor
    finally:
        down = _sriovop("dev", "cluster", "down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    assert [pid for pid in [supervisor, *children] if process.pid_alive(pid)] == []


def test_down_when_nothing_runs_is_harmless(tmp_path: Path) -> None:
    down = _sriovop("dev", "cluster", "down", "--dir", str(tmp_path))
    assert down.returncode == 0
    assert "not running" in down.stderr


def test_restart_kubelet_needs_a_running_cluster_and_a_known_node(tmp_path: Path) -> None:
    """Host: this machine; only the control plane (no kubelet to restart). The restart itself, with a real
    kubelet, is in test/integration/cluster/test_device_plugin_kubelet.py."""
    none = _sriovop("dev", "cluster", "restart-kubelet", "--dir", str(tmp_path / "absent"), "--node", "n")
    assert none.returncode == 1 and "no cluster is running" in none.stderr
    directory = tmp_path / "cluster"
    assert _sriovop("dev", "cluster", "up", "--dir", str(directory)).returncode == 0
    try:
        unknown = _sriovop("dev", "cluster", "restart-kubelet", "--dir", str(directory), "--node", "sriovop-node-9")
    finally:
        down = _sriovop("dev", "cluster", "down", "--dir", str(directory))
    assert unknown.returncode == 1 and "no node 'sriovop-node-9'" in unknown.stderr, unknown.stderr
    assert down.returncode == 0, down.stderr
