"""Heap trimming after bursts of replaced cache objects (sriovop.runtime.cache.trim).

No host is touched: the trim function is replaced by a recorder.
"""

from __future__ import annotations

import threading
import time

from sriovop.runtime.cache.trim import ChurnTrimmer


def test_a_burst_is_trimmed_once_it_pauses() -> None:
    trimmed = threading.Event()
    trimmer = ChurnTrimmer(threshold=100, quiet=0.05, max_delay=60.0, trim=trimmed.set)
    for _ in range(100):
        trimmer.note()
    assert trimmed.wait(30)
    assert trimmer.pending == 0


def test_a_burst_that_does_not_pause_is_trimmed_after_max_delay() -> None:
    trimmed = threading.Event()
    trimmer = ChurnTrimmer(threshold=10, quiet=0.05, max_delay=0.3, trim=trimmed.set)
    deadline = time.monotonic() + 30
    while not trimmed.is_set() and time.monotonic() < deadline:
        trimmer.note(10)  # churn in every quiet window: never a pause
        time.sleep(0.005)
    assert trimmed.is_set()


def test_churn_below_the_threshold_starts_no_trimmer() -> None:
    trimmer = ChurnTrimmer(threshold=100, quiet=0.05, trim=lambda: None)
    trimmer.note(99)
    assert trimmer._thread is None
