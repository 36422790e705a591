"""Prometheus' promtool for the monitoring rule tests: built from the Go module proxy by
hack/build-promtool.sh into a version-keyed cache (`make promtool`, part of `make prereqs`)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def promtool_binary() -> Path:
    """Build (first time: many minutes) or find (cached: milliseconds) promtool. A failed build fails the
    test that needs it: a rule file nobody checked must not pass."""
    done = subprocess.run(["bash", str(REPO / "hack" / "build-promtool.sh")], capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, f"hack/build-promtool.sh failed (`make promtool`):\n{done.stderr[-3000:]}"
    path = Path(done.stdout.strip().splitlines()[-1]) / "promtool"
    assert path.is_file(), f"hack/build-promtool.sh did not leave {path}"
    return path


def promtool(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool_binary()), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)
