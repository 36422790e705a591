"""Give freed heap back to the OS after a big LIST and after bursts of watch events.

Decoding a LIST allocates the whole response plus every object (managedFields included) at once;
after the cache keeps only the stripped objects, glibc keeps the freed chunks and RSS stays at the
peak (about 1.4x the live set, measured). A burst of watch events does the same more slowly: every
MODIFIED event decodes a new object and frees the one it replaces, and a controller writing
thousands of objects decodes and drops as many responses, spread over the arenas of its threads.
`release_free_memory` (sriovop.runtime.heap) gives the free pages of every arena back.

`note_churn(n)` counts objects replaced; once `TRIM_AFTER` have been counted and the burst has paused
for `QUIET` seconds (or `MAX_DELAY` seconds into a burst that does not pause), one background thread
trims. A trim walks the heap (milliseconds for hundreds of MiB), so it is not done per event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sriovop.runtime.heap import release_free_memory

TRIM_AFTER = 1000  # objects replaced; fewer leave too little behind to be worth a trim
QUIET = 2.0  # seconds without churn that end a burst
MAX_DELAY = 30.0  # seconds; a burst that never pauses is trimmed this often


class ChurnTrimmer:
    """Trims once per burst of replaced objects (see the module docstring)."""

    def __init__(self, threshold: int = TRIM_AFTER, quiet: float = QUIET, max_delay: float = MAX_DELAY,
                 trim: Callable[[], object] = release_free_memory) -> None:
        self.threshold = threshold
        self.quiet = quiet
        self.max_delay = max_delay
        self._trim_fn = trim
        self.pending = 0  # a plain int: a lost increment under a race only delays a trim
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def note(self, count: int = 1) -> None:
        self.pending += count
        if self._thread is None and self.pending >= self.threshold:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="heap-trim", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        burst_start: float | None = None
        seen = 0
        while True:
            time.sleep(self.quiet)
            pending = self.pending
            if pending < self.threshold:
                burst_start, seen = None, pending
                continue
            now = time.monotonic()
            if burst_start is None:
                burst_start = now
            if pending == seen or now - burst_start >= self.max_delay:
                self.pending -= pending
                self._trim_fn()
                burst_start, seen = None, 0
            else:
                seen = pending


_churn = ChurnTrimmer()


def note_churn(count: int = 1) -> None:
    """`count` cached objects were replaced or deleted (their memory freed): see the module docstring."""
    _churn.note(count)
