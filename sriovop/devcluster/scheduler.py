"""kube-scheduler for a cluster with nodes (default profile, one replica, no leader election)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sriovop.devcluster import process


def spawn(binary: Path, kubeconfig: Path, log_path: Path) -> subprocess.Popen[bytes]:
    return process.spawn(
        [str(binary), f"--kubeconfig={kubeconfig}",
         f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
         "--authentication-skip-lookup=true",  # no front-proxy (requestheader) CA to look up here
         "--bind-address=127.0.0.1", f"--secure-port={process.free_port()}", "--leader-elect=false",
         "--profiling=false"],
        log_path,
    )
