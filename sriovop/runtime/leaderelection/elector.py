"""The leader elector: client-go's algorithm plus a Lease watch and write fencing.

client-go semantics kept: a jittered acquire loop ([RetryPeriod, 2.2*RetryPeriod)), a renew loop every
RetryPeriod, lease expiry judged only from the *local monotonic* time at which a change to the record
was last observed (never by comparing timestamps written by other machines), OnStoppedLeading always
called when run() returns, release (empty holder, 1 s duration) on graceful stop.

Beyond client-go:
- Followers also WATCH the Lease: a release is acted on when it is seen, not at the next poll, and a
  follower schedules an attempt for the moment the lease would expire.
- Renewal is bounded by the time of the last successful renewal + RenewDeadline (not per round), each
  attempt runs with that deadline even if the API call hangs, and `may_write()` is False as soon as the
  last successful renewal is older than RenewDeadline. Followers wait LeaseDuration > RenewDeadline
  from when they saw that renewal, so a leader that checks `may_write()` before writing has stopped
  writing before anyone else can start (the fencing client-go does not give).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog

from sriovop.runtime.errors import ApiError, Conflict, NotFound
from sriovop.runtime.leaderelection.config import JITTER_FACTOR, LeaderElectionConfig
from sriovop.runtime.leaderelection.leaselock import ResourceLock
from sriovop.runtime.leaderelection.metrics import MASTER_STATUS, SLOWPATH
from sriovop.runtime.leaderelection.record import LeaderElectionRecord, format_micro_time
from sriovop.runtime.rand import RNG

log = structlog.get_logger(__name__)

R = TypeVar("R")


class NotLeaderError(RuntimeError):
    """Raised by `check_fenced()`: this replica may not write (not leader, or lease possibly expired)."""


class _Attempt:
    """One bounded API attempt; once abandoned (deadline passed) its late result must change nothing."""

    __slots__ = ("abandoned",)

    def __init__(self) -> None:
        self.abandoned = False


class LeaderElector:
    """Usage::

        lock = LeaseLock(client, namespace, "sriov-network-operator-lock", identity)
        elector = LeaderElector(lock, LeaderElectionConfig(name="sriov-operator"),
                                on_started_leading=start_controllers,   # gets a stop Event
                                on_stopped_leading=lambda: sys.exit("leader election lost"))
        threading.Thread(target=elector.run, args=(stop,)).start()
        ...
        elector.check_fenced()      # in leader-gated code, right before each write
    """

    def __init__(
        self,
        lock: ResourceLock,
        config: LeaderElectionConfig | None = None,
        *,
        on_started_leading: Callable[[threading.Event], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        cfg = config or LeaderElectionConfig()
        cfg.validate()
        if lock is None:
            raise ValueError("Lock must not be nil.")
        if not lock.identity:
            raise ValueError("Lock identity is empty")
        if on_started_leading is None:
            raise ValueError("on_started_leading callback must not be nil")
        if on_stopped_leading is None:
            raise ValueError("on_stopped_leading callback must not be nil")
        self.lock = lock
        self.config = cfg
        self.identity = lock.identity
        self.name = cfg.name or lock.describe()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock
        self._wall = wall_clock
        self._lease_seconds = max(1, math.ceil(cfg.lease_duration))

        self._state = threading.Lock()
        self._observed = LeaderElectionRecord()
        self._observed_raw: str | None = None
        self._observed_rv: str = ""
        self._observed_time = -math.inf
        self._last_renew = -math.inf  # monotonic time an accepted write of ours was *sent*
        self._leading = False
        self._reported_leader: str | None = None

        self._wake = threading.Condition()
        self._woken = False
        self._stream: Any = None
        self._run_done = threading.Event()
        MASTER_STATUS.labels(self.name).set(0)

    # --- public state -----------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True from a successful acquire until leading stops (renew failed, or run() was stopped)."""
        with self._state:
            return self._leading

    def may_write(self) -> bool:
        """True only while leading and our last successful renewal is younger than RenewDeadline."""
        with self._state:
            return self._leading and self._clock() - self._last_renew < self.config.renew_deadline

    def check_fenced(self) -> None:
        """Raise NotLeaderError unless `may_write()`; call it right before every leader-gated write."""
        if not self.may_write():
            with self._state:
                age = self._clock() - self._last_renew
                leading = self._leading
            reason = "not the leader" if not leading else (
                f"lease last renewed {age:.1f}s ago, beyond renew_deadline {self.config.renew_deadline}s")
            raise NotLeaderError(f"{self.identity} may not write to {self.name}: {reason}")

    def get_leader(self) -> str:
        """The holder last observed (may be stale or empty)."""
        with self._state:
            return self._observed.holder_identity

    def healthy(self, max_tolerable_expired_lease: float = 0.0) -> bool:
        """client-go Check: a leader that has not renewed for LeaseDuration + tolerance is stuck."""
        with self._state:
            if not self._leading:
                return True
            return self._clock() - self._observed_time <= self.config.lease_duration + max_tolerable_expired_lease

    # --- run ----------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Block until `stop` is set or leadership is lost; on_stopped_leading always runs at the end.

        Set `stop` only after leader-gated work has stopped: the lease is released (so a follower can
        take over at once) after the on_started_leading thread has returned.
        """
        relay = threading.Thread(target=self._relay_stop, args=(stop,), name=f"le-stop-{self.name}",
                                 daemon=True)
        relay.start()
        watcher: threading.Thread | None = None
        if self.config.watch:
            watcher = threading.Thread(target=self._watch_loop, args=(stop,), name=f"le-watch-{self.name}",
                                       daemon=True)
            watcher.start()
        try:
            if not self._acquire(stop):
                return
            leader_stop = threading.Event()
            started = threading.Thread(target=self._on_started, args=(leader_stop,),
                                       name=f"le-leading-{self.name}", daemon=True)
            started.start()
            self._renew(stop)
            with self._state:
                self._leading = False
            MASTER_STATUS.labels(self.name).set(0)
            leader_stop.set()
            if stop.is_set() and self.config.release_on_cancel:
                started.join(self.config.renew_deadline)
                if started.is_alive():
                    log.warning("leader work still running; not releasing the lease (it will expire)",
                                lease=self.lock.describe(), identity=self.identity)
                else:
                    self._bounded(lambda _attempt, _timeout: self._release(), self.config.renew_deadline,
                                  threading.Event())
        finally:
            with self._state:
                self._leading = False
            MASTER_STATUS.labels(self.name).set(0)
            self._run_done.set()
            self._poke()
            stream = self._stream
            if stream is not None:
                stream.close()
            self._on_stopped()

    # --- acquire ------------------------------------------------------------------------------------
    def _acquire(self, stop: threading.Event) -> bool:
        log.info("attempting to acquire leader lease", lease=self.lock.describe(), identity=self.identity)
        while not stop.is_set():
            ok = self._bounded(self._try_acquire_or_renew, self.config.renew_deadline, stop)
            self._maybe_report_transition()
            if ok:
                with self._state:
                    self._leading = True
                MASTER_STATUS.labels(self.name).set(1)
                log.info("successfully acquired lease", lease=self.lock.describe(), identity=self.identity)
                return True
            self._sleep_until_retry(stop)
        return False

    def _sleep_until_retry(self, stop: threading.Event) -> None:
        period = self.config.retry_period
        timeout = period + RNG.random() * JITTER_FACTOR * period
        with self._state:
            holder = self._observed.holder_identity
            if holder and holder != self.identity:
                expires_in = self._observed_time + self._observed.lease_duration_seconds - self._clock()
                # Be there when it expires rather than up to 2.2 retry periods later.
                timeout = min(timeout, max(0.0, expires_in) + 0.05)
        with self._wake:
            if not self._woken and not stop.is_set():
                self._wake.wait(timeout)
            self._woken = False

    def _poke(self) -> None:
        with self._wake:
            self._woken = True
            self._wake.notify_all()

    def _relay_stop(self, stop: threading.Event) -> None:
        while not self._run_done.is_set():
            if stop.wait(0.5):
                self._poke()
                return

    # --- renew --------------------------------------------------------------------------------------
    def _renew(self, stop: threading.Event) -> None:
        while not stop.wait(self.config.retry_period):
            if not self._renew_until_deadline(stop):
                log.info("failed to renew lease", lease=self.lock.describe(), identity=self.identity)
                return

    def _renew_until_deadline(self, stop: threading.Event) -> bool:
        with self._state:
            deadline = self._last_renew + self.config.renew_deadline
        while not stop.is_set():
            remaining = deadline - self._clock()
            if remaining <= 0:
                return False
            if self._bounded(self._try_acquire_or_renew, remaining, stop):
                self._maybe_report_transition()
                return True
            remaining = deadline - self._clock()
            if remaining <= 0 or stop.wait(min(self.config.retry_period, remaining)):
                return False
        return False

    # --- one attempt --------------------------------------------------------------------------------
    def _bounded(self, fn: Callable[[_Attempt, float], bool], timeout: float, stop: threading.Event) -> bool:
        """Run fn on a helper thread; give up after `timeout` (or on stop) even if its API call hangs."""
        attempt = _Attempt()
        result: list[bool] = []
        done = threading.Event()

        def body() -> None:
            try:
                result.append(fn(attempt, timeout))
            except Exception:
                log.exception("leader election attempt failed", lease=self.lock.describe())
                result.append(False)
            finally:
                done.set()

        threading.Thread(target=body, name=f"le-attempt-{self.name}", daemon=True).start()
        deadline = time.monotonic() + timeout
        while not done.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if stop.is_set() or time.monotonic() >= deadline:
                with self._state:
                    if done.is_set():
                        break
                    attempt.abandoned = True
                log.warning("leader election attempt abandoned", lease=self.lock.describe(),
                            timeout=round(timeout, 3))
                return False
        return bool(result and result[0])

    def _try_acquire_or_renew(self, attempt: _Attempt, timeout: float) -> bool:
        started = self._clock()
        now = format_micro_time(self._wall())
        desired = LeaderElectionRecord(self.identity, self._lease_seconds, now, now, 0)

        with self._state:
            fast = self._observed.holder_identity == self.identity and self._lease_valid(started)
            observed = self._observed
        if fast:
            desired = LeaderElectionRecord(self.identity, self._lease_seconds, observed.acquire_time, now,
                                           observed.leader_transitions)
            try:
                self.lock.update(desired, timeout)
            except ApiError as exc:
                log.info("fast-path lease update failed; falling back to get", error=str(exc))
            else:
                return self._commit(attempt, desired, started)

        try:
            old, raw = self.lock.get(timeout)
            seen = self._clock()  # the record is at least this fresh; later is the safe side
        except NotFound:
            try:
                self.lock.create(desired, timeout)
            except ApiError as exc:
                log.info("lease create failed", lease=self.lock.describe(), error=str(exc))
                return False
            return self._commit(attempt, desired, started)
        except ApiError as exc:
            log.info("lease get failed", lease=self.lock.describe(), error=str(exc))
            return False

        with self._state:
            if attempt.abandoned:
                return False
            if raw != self._observed_raw:
                self._observed, self._observed_raw, self._observed_time = old, raw, seen
            held_by_other = (old.holder_identity not in ("", self.identity)
                             and self._observed_time + old.lease_duration_seconds > seen)
            already_leader = self._observed.holder_identity == self.identity
        if held_by_other:
            return False

        if already_leader:
            desired = LeaderElectionRecord(self.identity, self._lease_seconds, old.acquire_time, now,
                                           old.leader_transitions)
            SLOWPATH.labels(self.name).inc()
        else:
            desired = LeaderElectionRecord(self.identity, self._lease_seconds, now, now,
                                           old.leader_transitions + 1)
        try:
            self.lock.update(desired, timeout)
        except Conflict:
            log.info("lease update conflict: another candidate wrote first", lease=self.lock.describe())
            return False
        except ApiError as exc:
            log.info("lease update failed", lease=self.lock.describe(), error=str(exc))
            return False
        return self._commit(attempt, desired, started)

    def _commit(self, attempt: _Attempt, record: LeaderElectionRecord, started: float) -> bool:
        with self._state:
            if attempt.abandoned:
                return False
            self._observed = record
            self._observed_raw = None  # our own write: force the next get to re-read the raw form
            self._observed_time = started
            self._last_renew = started
        return True

    def _lease_valid(self, now: float) -> bool:
        return self._observed_time + self._observed.lease_duration_seconds > now

    def _maybe_report_transition(self) -> None:
        with self._state:
            holder = self._observed.holder_identity
            if holder == self._reported_leader:
                return
            self._reported_leader = holder
        if holder:
            log.info("new leader observed", lease=self.lock.describe(), leader=holder)
        if self._on_new_leader is not None:
            threading.Thread(target=self._on_new_leader, args=(holder,), name=f"le-new-leader-{self.name}",
                             daemon=True).start()

    # --- release ------------------------------------------------------------------------------------
    def _release(self) -> bool:
        deadline = time.monotonic() + self.config.renew_deadline
        while time.monotonic() < deadline:
            remaining = deadline - time.monotonic()
            try:
                current, _ = self.lock.get(remaining)
                if current.holder_identity != self.identity:
                    return True
                now = format_micro_time(self._wall())
                self.lock.update(LeaderElectionRecord("", 1, now, now, current.leader_transitions),
                                 max(0.1, deadline - time.monotonic()))
            except Conflict:
                continue
            except ApiError as exc:
                log.warning("failed to release lease", lease=self.lock.describe(), error=str(exc))
                return False
            with self._state:
                self._observed = LeaderElectionRecord("", 1, now, now, current.leader_transitions)
                self._observed_raw = None
            log.info("released lease", lease=self.lock.describe(), identity=self.identity)
            return True
        return False

    # --- watch --------------------------------------------------------------------------------------
    def _watch_loop(self, stop: threading.Event) -> None:
        """Feed observed changes to the acquire loop as they happen; polling remains the fallback."""
        while not stop.is_set() and not self._run_done.is_set():
            try:
                stream = self.lock.watch()
                if stream is None:
                    return  # this lock cannot be watched: polling only
                self._stream = stream
                if self._run_done.is_set():
                    stream.close()
                    return
                for etype, obj in stream:
                    if etype in ("ADDED", "MODIFIED", "DELETED"):
                        self._observe_from_watch(etype, obj)
            except ApiError as exc:
                if stop.is_set() or self._run_done.is_set():
                    return
                log.debug("lease watch ended", lease=self.lock.describe(), error=str(exc))
            except Exception:
                if stop.is_set() or self._run_done.is_set():
                    return  # closing the stream from run()'s exit breaks the read in various ways
                log.exception("lease watch failed", lease=self.lock.describe())
            if stop.wait(self.config.retry_period):
                return

    def _observe_from_watch(self, etype: str, obj: dict[str, Any]) -> None:
        spec = obj.get("spec") or {}
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        record = LeaderElectionRecord.from_lease_spec(spec)
        wake = False
        with self._state:
            if self._leading:
                return  # the leader trusts its own writes; a delayed event must not roll them back
            if _older(rv, self._observed_rv):
                return
            self._observed_rv = rv
            if etype == "DELETED":
                wake = True
            else:
                raw = json.dumps(spec, sort_keys=True)
                if raw != self._observed_raw:
                    self._observed, self._observed_raw = record, raw
                    self._observed_time = self._clock()
                wake = not record.holder_identity
        self._maybe_report_transition()
        if wake:
            self._poke()


def _older(rv: str, than: str) -> bool:
    try:
        return int(rv) <= int(than)
    except ValueError:
        return False
