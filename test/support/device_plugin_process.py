"""`sriovop device-plugin` run as a process, the way a node runs it, for tests: its log, its end."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from test.support.cluster import SRIOVOP


@contextmanager
def device_plugin(log: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """Start it with `args`; on the way out SIGTERM it and fail unless it exits 0 (log tail in the message)."""
    with log.open("wb") as out:
        proc = subprocess.Popen([*SRIOVOP, "device-plugin", "--log-level=10", "--log-format=console", *args],
                                stdout=subprocess.DEVNULL, stderr=out)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 0, f"device-plugin exited {proc.returncode}:\n{log.read_text()[-4000:]}"
