"""The machinery's background draws leave the global `random` state alone.

Reflectors, backoffs and electors keep running on threads after the test that started them; when they
drew from the global generator, Hypothesis saw its state change under an unrelated property test and
failed it. Pure logic, no cluster.
"""

from __future__ import annotations

import random
import threading
from typing import cast

from sriovop.runtime.cache import Backoff, Reflector
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import CONFIG_MAP
from sriovop.runtime.leaderelection import LeaderElectionConfig, LeaderElector
from test.support.runtime_fakes import FakeClient
from test.unit.leaderelection.test_leaderelection_try_acquire import FakeLock
from test.unit.runtime.test_runtime_reflector import RecordingSink


def test_jitter_and_watch_timeouts_do_not_touch_the_global_generator() -> None:
    reflector = Reflector(cast(Client, FakeClient()), CONFIG_MAP, RecordingSink(), namespace="ns")
    elector = LeaderElector(
        FakeLock(None), LeaderElectionConfig(lease_duration=10, renew_deadline=5, retry_period=0.001),
        on_started_leading=lambda _s: None, on_stopped_leading=lambda: None)
    stopped = threading.Event()
    stopped.set()
    before = random.getstate()
    backoff = Backoff()
    delays = [backoff.next() for _ in range(5)]
    timeouts = {reflector.watch_timeout() for _ in range(50)}
    elector._sleep_until_retry(stopped)
    assert random.getstate() == before
    # They still jitter: drawn, not fixed.
    assert all(0.8 * 2 ** i <= d <= min(2 * 0.8 * 2 ** i, 30.0) for i, d in enumerate(delays))
    assert len(timeouts) > 1 and all(300 <= t < 600 for t in timeouts)
