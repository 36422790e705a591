"""Prometheus' promtool for the monitoring rule tests: unpacked from Debian's prometheus package by
hack/get-promtool.sh into a version-keyed cache (`make promtool`, part of `make prereqs`)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from test.support.hack_build import REPO, hack_built

__all__ = ["REPO", "promtool", "promtool_binary"]


@functools.cache
def promtool_binary() -> Path:
    """Fetch (first time: seconds; `make promtool`) or find (cached) promtool. A failed fetch fails the
    test that needs it: a rule file nobody checked must not pass."""
    return hack_built("get-promtool.sh", "promtool", timeout=900)


def promtool(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool_binary()), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)
