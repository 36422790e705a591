"""Tools the tests run, put by a hack/*.sh script (a Go build or a Debian package) into a version-keyed cache
outside the repo."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def hack_built(script: str, binary: str, timeout: float) -> Path:
    """Run hack/SCRIPT (the first time it builds, for minutes; cached, it returns at once) and return
    BINARY from the directory it prints last. A failed build fails the test that needs the tool."""
    done = subprocess.run(["bash", str(REPO / "hack" / script)], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"hack/{script} failed:\n{done.stderr[-3000:]}"
    path = Path(done.stdout.strip().splitlines()[-1]) / binary
    assert path.is_file(), f"hack/{script} did not leave {path}"
    return path
