"""Three `sriovop operator` replicas with leader election, each restarted under a fresh identity.

A replica is one process incarnation: `replica-<slot>-<generation>`. Identities are never reused, so a
replica's writes form at most one leadership term (losing the lease ends the process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from test.support.failover_analysis import Write, parse_writes
from test.support.operator_process import OperatorProcess

LEASE_NAME = "a56def2a.openshift.io"


@dataclass(frozen=True)
class Durations:
    lease: float
    renew: float
    retry: float

    def args(self) -> list[str]:
        return ["--leader-election-lease-duration", f"{self.lease}s",
                "--leader-election-renew-deadline", f"{self.renew}s",
                "--leader-election-retry-period", f"{self.retry}s"]


class Replica:
    def __init__(self, slot: int, generation: int, kubeconfig: Path, namespace: str, log_dir: Path,
                 durations: Durations) -> None:
        self.slot = slot
        self.identity = f"replica-{slot}-{generation}"
        self.log_path = log_dir / f"{self.identity}.log"
        self.process = OperatorProcess(
            kubeconfig, namespace, self.log_path,
            args=["--log-format", "json", "--metrics-bind-address", "0", "--leader-elect",
                  "--leader-election-id", LEASE_NAME, "--leader-election-identity", self.identity,
                  "--graceful-shutdown-timeout", "10s", *durations.args()])
        self._offset = 0
        self._partial = b""
        self.writes: list[Write] = []
        self.exit_code: int | None = None
        self.stopped = False  # SIGSTOPped by the harness

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def alive(self) -> bool:
        if self.exit_code is not None:
            return False
        code = self.process.proc.poll()
        if code is not None:
            self.exit_code = code
            return False
        return True

    def ready(self) -> bool:
        if not self.alive():
            return False
        try:
            return self.process.get("/readyz")[0] == 200
        except OSError:
            return False

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.pid, sig)
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False

    def wait(self, timeout: float) -> int | None:
        try:
            self.exit_code = self.process.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_code

    def read_writes(self) -> list[Write]:
        """Parse the log lines written since the last call; returns all writes so far."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return self.writes
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        self.writes.extend(parse_writes(line.decode("utf-8", "replace") for line in lines))
        return self.writes

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """Leave nothing behind: a stopped process must be continued to die promptly."""
        if self.process.proc.poll() is None:
            if self.stopped:
                self.signal(signal.SIGCONT)
            self.process.proc.kill()
        self.process.stop()
        if self.exit_code is None:
            self.exit_code = self.process.proc.returncode


class ReplicaSet:
    def __init__(self, kubeconfig: Path, namespace: str, log_dir: Path, durations: Durations, size: int = 3) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.log_dir = log_dir
        self.durations = durations
        self.generations = [0] * size
        self.slots: list[Replica] = []
        self.retired: list[Replica] = []
        self.exited: list[Replica] = []  # replaced by restart_exited(), not yet reported
        for slot in range(size):
            self.slots.append(self._spawn(slot))

    def _spawn(self, slot: int) -> Replica:
        replica = Replica(slot, self.generations[slot], self.kubeconfig, self.namespace, self.log_dir,
                          self.durations)
        self.generations[slot] += 1
        return replica

    def all(self) -> list[Replica]:
        return [*self.retired, *self.slots]

    def by_identity(self, identity: str) -> Replica | None:
        return next((r for r in self.slots if r.identity == identity), None)

    def restart(self, slot: int) -> Replica:
        old = self.slots[slot]
        old.kill()
        self.retired.append(old)
        self.slots[slot] = self._spawn(slot)
        return self.slots[slot]

    def restart_exited(self) -> list[Replica]:
        """Replace every replica that exited; returns the ones replaced (with their exit codes)."""
        gone = [r for r in self.slots if not r.alive() and not r.stopped]
        for r in gone:
            self.restart(r.slot)
        self.exited.extend(gone)
        return gone

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.restart_exited()
            if all(r.ready() for r in self.slots):
                return True
            time.sleep(0.2)
        return False

    def writes(self) -> list[Write]:
        out: list[Write] = []
        for r in self.all():
            out.extend(r.read_writes())
        return out

    def stop(self) -> None:
        for r in self.slots:
            r.kill()
