"""One Lease for both managers: the process is the leader, not each manager.

The operator runs two managers; their leader-gated controllers must start and stop together, under one
Lease. `SharedElection` runs a single sriovop.runtime.leaderelection elector and hands each manager a
seam (the manager's `LeaderElector` protocol): every manager's `on_started_leading` runs once the
process is elected, every `on_stopped_leading` runs when it stops leading. The lease is released only
when every manager has stopped its leader work (each calls its seam's `stop()` after that), so a
successor never overlaps with us.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from sriovop.runtime.client import Client
from sriovop.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock

log = structlog.get_logger(__name__)

Callback = Callable[[], None]


class _Seam:
    def __init__(self, owner: SharedElection, name: str) -> None:
        self.owner = owner
        self.name = name
        self.on_started: Callback | None = None
        self.on_stopped: Callback | None = None
        self.stopped = False

    def run(self, on_started_leading: Callback, on_stopped_leading: Callback) -> None:
        """Blocks until the election ends (lost, or released at shutdown), like an elector's run."""
        self.owner._register(self, on_started_leading, on_stopped_leading)
        self.owner.done.wait()
        on_stopped_leading()

    def stop(self) -> None:
        self.owner._seam_stopped(self)


class SharedElection:
    def __init__(self, client: Client, namespace: str, lease_name: str, identity: str,
                 config: LeaderElectionConfig, expected_seams: int = 2,
                 before_release: Callback | None = None) -> None:
        """`before_release` runs once every manager stopped its leader work, while the lease is still
        ours (the operator's shutdown cleanup), so a successor never sees it run after its start."""
        self.lock = LeaseLock(client, namespace, lease_name, identity)
        self.elector = LeaderElector(self.lock, config, on_started_leading=self._started,
                                     on_stopped_leading=self._stopped)
        self.expected = expected_seams
        self.before_release = before_release
        self.done = threading.Event()
        self.ever_led = threading.Event()
        self._lock = threading.Lock()
        self._seams: list[_Seam] = []
        self._leading = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def seam(self, name: str) -> _Seam:
        seam = _Seam(self, name)
        with self._lock:
            self._seams.append(seam)
        return seam

    def _register(self, seam: _Seam, on_started: Callback, on_stopped: Callback) -> None:
        with self._lock:
            seam.on_started, seam.on_stopped = on_started, on_stopped
            leading = self._leading
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
                self._thread.start()
        if leading:
            on_started()

    def _run(self) -> None:
        try:
            self.elector.run(self._stop)
        finally:
            self.done.set()

    def _started(self, leader_stop: threading.Event) -> None:
        log.info("elected leader", identity=self.elector.identity, lease=self.lock.describe())
        self.ever_led.set()
        with self._lock:
            self._leading = True
            callbacks = [s.on_started for s in self._seams if s.on_started is not None]
        for cb in callbacks:
            cb()

    def _stopped(self) -> None:
        with self._lock:
            self._leading = False
        self.done.set()

    def _seam_stopped(self, seam: _Seam) -> None:
        with self._lock:
            seam.stopped = True
            all_stopped = all(s.stopped for s in self._seams) and len(self._seams) >= self.expected
            thread = self._thread
        if all_stopped:
            if self.before_release is not None and self.elector.is_leader():
                try:
                    self.before_release()
                except Exception as exc:  # cleanup is best effort; the lease must still be released
                    log.error("cleanup before releasing the lease failed", error=repr(exc))
            self._stop.set()
            if thread is not None:
                thread.join(self.elector.config.renew_deadline + 2)

    def may_write(self) -> bool:
        return self.elector.may_write()

    def healthy(self) -> bool:
        return self.elector.healthy(max_tolerable_expired_lease=20.0)
