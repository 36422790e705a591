"""A scripted stand-in for sriovop.runtime.client.Client, for pure-logic reflector/informer tests.

Integration tests use the real API server; this fake only replays the responses a test scripts.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from sriovop.runtime.client import ListPage


def cm(name: str, rv: str, ns: str = "ns", **data: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv}, "data": data}


class FakeWatch:
    """Yields scripted events; then either ends, raises, or blocks until closed (block=True)."""

    def __init__(self, events: list[tuple[str, Any]], error: Exception | None = None, block: bool = False):
        self._events = events
        self._error = error
        self._block = block
        self._closed = threading.Event()
        self.events = 0

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for ev in self._events:
            self.events += 1
            yield ev
        if self._error is not None:
            raise self._error
        if self._block:
            self._closed.wait()

    def close(self) -> None:
        self._closed.set()


class FakeClient:
    """`lists`: queue of ListPage or Exception answers; `watches`: queue of FakeWatch or Exception.
    When a queue runs dry, lists answer empty at RV "1" and watches block until closed."""

    def __init__(self) -> None:
        self.lists: deque[ListPage | Exception] = deque()
        self.watches: deque[FakeWatch | Exception] = deque()
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def list_page(self, kind: Any, namespace: Any = None, **kw: Any) -> ListPage:
        with self.lock:
            self.list_calls.append(kw)
            answer = self.lists.popleft() if self.lists else ListPage([], "1", "")
        if isinstance(answer, Exception):
            raise answer
        transform = kw.get("item_transform")
        if transform is not None:  # the real client transforms items while decoding
            return ListPage([transform(dict(i)) for i in answer.items], answer.resource_version, answer.continue_)
        return answer

    def watch(self, kind: Any, namespace: Any = None, **kw: Any) -> FakeWatch:
        with self.lock:
            self.watch_calls.append(kw)
            answer = self.watches.popleft() if self.watches else FakeWatch([], block=True)
        if isinstance(answer, Exception):
            raise answer
        return answer
