"""The demo's child processes, stopped in reverse start order so nothing outlives the demo.

Every child also dies with the demo through PR_SET_PDEATHSIG (see devcluster.process), which covers
a demo killed with SIGKILL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sriovop.devcluster import process


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 15) -> str:
        return process.log_tail(self.log, lines)


class ProcessGroup:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        self.children: list[Child] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Child:
        log = self.log_dir / f"{name}.log"
        log.unlink(missing_ok=True)
        child = Child(name, process.spawn(argv, log, env={**os.environ, **(env or {})}), log)
        self.children.append(child)
        return child

    def sriovop(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Child:
        return self.start(name, [sys.executable, "-m", "sriovop.cli", *args], env)

    def check_alive(self) -> None:
        for child in self.children:
            code = child.proc.poll()
            if code is not None:
                raise RuntimeError(f"{child.name} exited with code {code}; last lines of {child.log}:\n{child.tail()}")

    def stop(self, child: Child, grace: float = 15.0) -> None:
        process.terminate(child.proc, grace=grace)

    def stop_all(self) -> None:
        for child in reversed(self.children):
            process.terminate(child.proc, grace=15.0)
        self.children.clear()


def wait_for_line(child: Child, prefix: str, timeout: float) -> str:
    """The first line of a child's log starting with `prefix` (how the simulator announces itself)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.log.exists():
            for line in child.log.read_text(errors="replace").splitlines():
                if line.startswith(prefix):
                    return line
        if child.proc.poll() is not None:
            raise RuntimeError(f"{child.name} exited with code {child.proc.returncode}:\n{child.tail()}")
        time.sleep(0.1)
    raise TimeoutError(f"{child.name} printed no line starting with {prefix!r} within {timeout:.0f}s")
