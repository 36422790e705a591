"""The one way the tests run kubectl against a cluster: the venv's binary with a private discovery cache.

Why private: kubectl keys its on-disk discovery cache by host:port, and the suite starts many clusters
on recycled loopback ports (and a concurrent session runs beside it). A cache left by a cluster that
had the CRDs installed made kubectl map SriovOperatorConfig on one that had not (seen once in a whole
run); with a fresh cache per call kubectl asks the server it talks to.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KUBECTL = REPO / ".venv" / "bin" / "kubectl"


def run_kubectl(kubeconfig: Path, *args: str, timeout: float = 300.0,
                check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `kubectl args` from the repository root; with `check`, a non-zero exit raises with its output."""
    assert KUBECTL.is_file(), f"{KUBECTL} is missing: `make install` puts kubectl into .venv"
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache:
        done = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args],
                              capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO)
    if check and done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done
