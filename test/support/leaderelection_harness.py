"""Helpers for driving several LeaderElectors against the real API server in one test."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError
from sriovop.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock

# Short durations so a takeover after expiry takes seconds; RD > 1.2 * RP as client-go requires.
FAST = LeaderElectionConfig(lease_duration=3.0, renew_deadline=2.0, retry_period=0.5)


class FaultyClient:
    """Wraps the real Client. `hang` blocks every request until cleared; `barrier` pauses after GETs;
    every ApiError raised by a request is recorded in `errors`."""

    def __init__(self, inner: Client) -> None:
        self.inner = inner
        self.hang = threading.Event()
        self._unhang = threading.Event()
        self.after_get: Callable[[], None] | None = None
        self.errors: list[ApiError] = []
        self.requests: list[str] = []

    def block(self) -> None:
        self._unhang.clear()
        self.hang.set()

    def unblock(self) -> None:
        self.hang.clear()
        self._unhang.set()

    def request(self, method: str, path: str, **kw: Any) -> Any:
        if self.hang.is_set():
            self._unhang.wait()
        self.requests.append(method)
        try:
            resp = self.inner.request(method, path, **kw)
        except ApiError as exc:
            self.errors.append(exc)
            raise
        if method == "GET" and self.after_get is not None:
            self.after_get()
        return resp

    def watch(self, *args: Any, **kw: Any) -> Any:
        return self.inner.watch(*args, **kw)


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    client: FaultyClient
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    started_at: float | None = None
    stopped_at: float | None = None
    leader_stop: threading.Event | None = None
    new_leaders: list[str] = field(default_factory=list)

    def start(self) -> Candidate:
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True,
                                       name=f"candidate-{self.identity}")
        self.thread.start()
        return self

    def crash(self, timeout: float = 30.0) -> None:
        """Stop with every API call hanging: no release reaches the server, the lease must expire."""
        self.client.block()
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout)
            assert not self.thread.is_alive(), f"{self.identity}: run() did not return after stop"

    def shutdown(self, timeout: float = 30.0) -> None:
        self.stop.set()
        self.client.unblock()
        if self.thread is not None:
            self.thread.join(timeout)
            assert not self.thread.is_alive(), f"{self.identity}: run() did not return after stop"


class MonotonicWithJump:
    """A monotonic clock that a test can jump forward (a paused process, a fast clock)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


class WallWithJump:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> datetime:
        return datetime.fromtimestamp(time.time() + self.offset, UTC)


def make_candidate(
    kubeconfig: Path, namespace: str, identity: str, *, lease: str = "lock",
    config: LeaderElectionConfig = FAST, clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], datetime] | None = None,
    lock_labels: Mapping[str, str] | None = None,
) -> Candidate:
    client = FaultyClient(Client(load_config(str(kubeconfig))))
    lock = LeaseLock(client, namespace, lease, identity, labels=lock_labels)
    holder: dict[str, Candidate] = {}

    def started(leader_stop: threading.Event) -> None:
        holder["c"].started_at = time.monotonic()
        holder["c"].leader_stop = leader_stop

    def stopped() -> None:
        holder["c"].stopped_at = time.monotonic()

    kwargs: dict[str, Any] = {}
    if wall_clock is not None:
        kwargs["wall_clock"] = wall_clock
    elector = LeaderElector(
        lock, LeaderElectionConfig(**{**config.__dict__, "name": f"{namespace}-{identity}"}),
        on_started_leading=started, on_stopped_leading=stopped,
        on_new_leader=lambda who: holder["c"].new_leaders.append(who), clock=clock, **kwargs,
    )
    cand = Candidate(identity, elector, client)
    holder["c"] = cand
    return cand


class Sampler:
    """Samples every candidate's may_write() and is_leader() in a tight loop; counts overlaps."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        self.samples = 0
        self.overlaps: list[list[str]] = []
        self.leader_overlaps: list[list[str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            writers = [c.identity for c in self.candidates if c.elector.may_write()]
            leaders = [c.identity for c in self.candidates if c.elector.is_leader()]
            if len(writers) > 1:
                self.overlaps.append(writers)
            if len(leaders) > 1:
                self.leader_overlaps.append(leaders)
            self.samples += 1
            time.sleep(0.002)


