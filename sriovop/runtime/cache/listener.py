"""Per-handler delivery: an unbounded queue and one thread per handler (client-go's processorListener).

A slow handler grows its own queue instead of blocking the informer or other handlers; each handler
sees notifications one at a time, in the order the cache applied them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

log = structlog.get_logger(__name__)

ADD, UPDATE, DELETE = 0, 1, 2


class EventHandler(Protocol):
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...
    def on_update(self, old: Any, new: Any) -> None: ...
    def on_delete(self, obj: Any) -> None: ...


@dataclass
class FuncHandler:
    """Build a handler from plain functions; missing ones ignore their events."""

    add: Callable[[Any, bool], None] | None = None
    update: Callable[[Any, Any], None] | None = None
    delete: Callable[[Any], None] | None = None

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self.add:
            self.add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        if self.update:
            self.update(old, new)

    def on_delete(self, obj: Any) -> None:
        if self.delete:
            self.delete(obj)


class Listener:
    """One registered handler. `has_synced()` is true once the informer synced and every initial-list
    add has been delivered to this handler."""

    def __init__(self, handler: EventHandler, resync_period: float, informer_synced: Callable[[], bool],
                 name: str) -> None:
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = time.monotonic() + resync_period if resync_period else 0.0
        self._informer_synced = informer_synced
        self._queue: deque[tuple[int, Any, Any, bool]] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._pending_initial = 0
        self._stopped = False
        self._idle = True
        self._thread = threading.Thread(target=self._run, name=f"handler-{name}", daemon=True)
        self.delivered = 0

    def start(self) -> None:
        self._thread.start()

    def has_synced(self) -> bool:
        with self._cond:
            pending = self._pending_initial
        return pending == 0 and self._informer_synced()

    def add(self, kind: int, old: Any, new: Any, initial: bool = False) -> None:
        with self._cond:
            if self._stopped:
                return
            if initial:
                self._pending_initial += 1
            self._queue.append((kind, old, new, initial))
            if self._idle:
                self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def pending(self) -> int:
        return len(self._queue)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every queued notification was handled (tests and shutdown use this)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if not self._queue and self._idle:
                    return True
            time.sleep(0.005)
        return False

    def _run(self) -> None:
        handler = self.handler
        queue = self._queue
        cond = self._cond
        while True:
            with cond:
                while not queue and not self._stopped:
                    self._idle = True
                    cond.wait()
                if self._stopped:
                    return
                kind, old, new, initial = queue.popleft()
                self._idle = False
            try:
                if kind == UPDATE:
                    handler.on_update(old, new)
                elif kind == ADD:
                    handler.on_add(new, initial)
                else:
                    handler.on_delete(old)
            except Exception as exc:  # a handler bug must not stop delivery to it
                log.error("event handler failed", error=repr(exc), exc_info=True)
            finally:
                self.delivered += 1
                if initial:
                    with cond:
                        self._pending_initial -= 1
