"""Prometheus' promtool for the monitoring rule tests: built from the Go module proxy by
hack/build-promtool.sh into a version-keyed cache (`make promtool`, part of `make prereqs`)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from test.support.hack_build import REPO, hack_built

__all__ = ["REPO", "promtool", "promtool_binary"]


@functools.cache
def promtool_binary() -> Path:
    """Build (first time: up to an hour; `make promtool`) or find (cached: milliseconds) promtool. A failed
    build fails the test that needs it: a rule file nobody checked must not pass."""
    return hack_built("build-promtool.sh", "promtool", timeout=3600)


def promtool(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool_binary()), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)
