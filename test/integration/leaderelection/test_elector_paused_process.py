"""Fencing: a leader process paused (SIGSTOP) past its lease, then resumed, must not write again.

client-go gives no such guarantee; ours comes from may_write() being judged on the monotonic clock,
which jumps by the paused time when the process resumes.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import CONFIG_MAP, LEASE
from test.support.leaderelection_harness import Candidate, make_candidate
from test.support.poll import wait_for

REPO = Path(__file__).resolve().parents[3]


class Child:
    def __init__(self, kubeconfig: Path, namespace: str, identity: str, log: Path) -> None:
        self.log = log
        with log.open("w") as stderr:  # a file, not a pipe: an unread pipe could block the child
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "test.support.leaderelection_child", str(kubeconfig), namespace,
                 identity],
                cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
        self.lines: queue.Queue[dict[str, object]] = queue.Queue()
        self.seen: list[dict[str, object]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))

    def wait_event(self, name: str, timeout: float = 30) -> dict[str, object]:
        while True:
            try:
                event = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"child never reported {name!r}; saw {self.seen[-5:]}") from None
            self.seen.append(event)
            if event["event"] == name:
                return event

    def state(self) -> str:
        return Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def child_and_follower(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[tuple[Child, Candidate]]:
    client = Client(load_config(str(kubeconfig)))
    client.create(CONFIG_MAP, {"metadata": {"name": "writes", "namespace": namespace}, "data": {}}, namespace)
    client.close()
    child = Child(kubeconfig, namespace, "paused", tmp_path / "child.log")
    follower = make_candidate(kubeconfig, namespace, "follower")
    try:
        yield child, follower
    finally:
        follower.shutdown()
        if child.proc.poll() is None:
            child.proc.send_signal(signal.SIGCONT)
            child.proc.kill()
        child.proc.wait(10)


def test_resumed_leader_exits_without_writing(kubeconfig: Path, namespace: str,
                                              child_and_follower: tuple[Child, Candidate]) -> None:
    child, follower = child_and_follower
    client = Client(load_config(str(kubeconfig)))
    try:
        child.wait_event("leading")
        child.wait_event("write")
        follower.start()
        wait_for(lambda: "paused" in follower.new_leaders, 10, "the follower to see the child lead")

        child.proc.send_signal(signal.SIGUSR1)
        paused = child.wait_event("pausing")
        wait_for(lambda: child.state() == "T", 10, "the child to be stopped")
        wait_for(lambda: follower.started_at is not None, 30, "the follower to take over")
        assert client.get(LEASE, "lock", namespace)["spec"]["holderIdentity"] == "follower"
        before = client.get(CONFIG_MAP, "writes", namespace)["data"]["paused"]
        assert before == str(paused["writes"])

        child.proc.send_signal(signal.SIGCONT)
        child.wait_event("resumed")
        lost = child.wait_event("lost")
        assert child.proc.wait(30) == 3
        assert "leader election lost" in child.log.read_text()
        assert lost["writes"] == paused["writes"]  # not a single write after resuming
        assert client.get(CONFIG_MAP, "writes", namespace)["data"]["paused"] == before
        assert follower.elector.is_leader()
    finally:
        client.close()
