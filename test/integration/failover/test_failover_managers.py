"""Two managers in one process share a Lease the way the operator does (operator/election.py); the
leader's Lease requests start to hang. The leader must stop its leader-gated work and fail with
"leader election lost" on its own, the follower must take over only after that, and at no moment may
both write: judged by a sampled Lease holder and by the server's commit order of every write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from sriovop.operator.election import SharedElection
from sriovop.operator.fencing import FencedClient
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ConnectionFailed, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, LEASE
from sriovop.runtime.leaderelection import LeaderElectionConfig, NotLeaderError
from sriovop.runtime.manager import LeaderElectionLost, Manager
from test.support.poll import wait_for

LEASE_NAME = "two-managers"
CONFIG = LeaderElectionConfig(lease_duration=4.0, renew_deadline=3.0, retry_period=0.5, name=LEASE_NAME)


class HangingClient(Client):
    """The election's client: once `hang` is set every request blocks (a dead connection) until the
    test ends, then fails."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.hang = threading.Event()
        self.released = threading.Event()

    def request(self, method: str, path: str, **kw: Any) -> Any:
        if self.hang.is_set():
            self.released.wait()
            raise ConnectionFailed(f"{method} {path}: blocked by the test")
        return super().request(method, path, **kw)


@dataclass
class Log:
    """What both replicas did, in one list: (monotonic time, identity, what, resourceVersion)."""

    entries: list[tuple[float, str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, identity: str, what: str, rv: int = 0) -> None:
        with self.lock:
            self.entries.append((time.monotonic(), identity, what, rv))

    def of(self, identity: str, what: str) -> list[tuple[float, str, str, int]]:
        with self.lock:
            return [e for e in self.entries if e[1] == identity and e[2] == what]


@dataclass
class Replica:
    identity: str
    election_client: HangingClient
    manager: Manager
    thread: threading.Thread
    stop: threading.Event
    error: list[BaseException]


def make_replica(kubeconfig: Path, namespace: str, identity: str, log: Log) -> Replica:
    rest = load_config(str(kubeconfig))
    election_client = HangingClient(rest)
    election = SharedElection(election_client, namespace, LEASE_NAME, identity, CONFIG, expected_seams=1)
    writer = FencedClient(load_config(str(kubeconfig)), election.may_write, "test", identity)
    manager = Manager(writer, name=identity, namespaces={namespace}, leader_elector=election.seam("only"),
                      graceful_shutdown_timeout=5.0, registry=CollectorRegistry())

    def leader_work(stop: threading.Event) -> None:
        log.add(identity, "started")
        n = 0
        try:
            while not stop.wait(0.05):
                n += 1
                try:
                    out = writer.patch(CONFIG_MAP, "writes", {"data": {"writer": identity, "n": str(n)}}, namespace)
                    log.add(identity, "write", int(out["metadata"]["resourceVersion"]))
                except NotLeaderError:
                    log.add(identity, "fenced")
        finally:
            log.add(identity, "stopped")

    manager.add(leader_work, need_leader_election=True)
    stop = threading.Event()
    error: list[BaseException] = []

    def run() -> None:
        try:
            manager.start(stop)
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=run, name=f"manager-{identity}", daemon=True)
    return Replica(identity, election_client, manager, thread, stop, error)


@pytest.fixture
def client(kubeconfig: Path, namespace: str) -> Iterator[Client]:
    c = Client(load_config(str(kubeconfig)))
    c.create(CONFIG_MAP, {"metadata": {"name": "writes", "namespace": namespace}, "data": {}}, namespace)
    yield c
    c.close()


def test_blocked_renewals_stop_the_leader_before_the_follower_starts(client: Client, kubeconfig: Path,
                                                                     namespace: str) -> None:
    log = Log()
    holders: list[str] = []
    sampling = threading.Event()

    renewals: list[tuple[float, str]] = []  # (monotonic time first seen, renewTime) of manager-a's renewals

    def sample() -> None:
        while not sampling.is_set():
            try:
                spec = client.get(LEASE, LEASE_NAME, namespace)["spec"]
            except NotFound:
                spec = {}
            holder = str(spec.get("holderIdentity") or "")
            if holder and (not holders or holders[-1] != holder):
                holders.append(holder)
            renew = str(spec.get("renewTime") or "")
            if holder == "manager-a" and (not renewals or renewals[-1][1] != renew):
                renewals.append((time.monotonic(), renew))
            sampling.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    a = make_replica(kubeconfig, namespace, "manager-a", log)
    b = make_replica(kubeconfig, namespace, "manager-b", log)
    try:
        a.thread.start()
        wait_for(lambda: log.of("manager-a", "write"), 60, "manager-a to lead and write")
        b.thread.start()
        wait_for(lambda: b.manager.cache.has_synced(), 60, "manager-b's cache (warm on a follower)")
        time.sleep(1.0)
        assert not log.of("manager-b", "started"), "a follower ran leader-gated work"

        a.election_client.hang.set()  # the leader's renewals now hang; its other writes still work
        a.thread.join(60)
        assert not a.thread.is_alive(), "the leader did not stop after its renewals hung"
        assert len(a.error) == 1 and isinstance(a.error[0], LeaderElectionLost), a.error
        assert str(a.error[0]) == "leader election lost"

        wait_for(lambda: log.of("manager-b", "write"), 60, "manager-b to take over and write")
    finally:
        a.election_client.released.set()
        for r in (a, b):
            r.stop.set()
        for r in (a, b):
            r.thread.join(30)
        sampling.set()
        sampler.join(5)

    a_stopped = log.of("manager-a", "stopped")
    b_started = log.of("manager-b", "started")
    assert len(a_stopped) == 1 and len(b_started) == 1
    assert a_stopped[0][0] < b_started[0][0], "the new leader started before the old one stopped"

    a_rvs = [e[3] for e in log.of("manager-a", "write")]
    b_rvs = [e[3] for e in log.of("manager-b", "write")]
    assert a_rvs and b_rvs
    assert max(a_rvs) < min(b_rvs), "the server committed a write of the old leader after the new one's"
    # Nothing the old leader attempted after its work stopped (or after the takeover) went through.
    assert all(e[0] <= a_stopped[0][0] for e in log.of("manager-a", "write"))
    # The follower waited for the lease to expire: LeaseDuration from the old leader's last renewal
    # (as seen by the 50 ms sampler; a generous second of slack for a starved sampler thread).
    last_renewal_seen = renewals[-1][0]
    assert b_started[0][0] - last_renewal_seen >= CONFIG.lease_duration - 1.0, (b_started, renewals[-3:])
    assert holders[:2] == ["manager-a", "manager-b"], holders
    assert "manager-a" not in holders[1:], holders
    assert not b.error, b.error
