"""Ports of client-go util/workqueue queue_test.go."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from sriovop.runtime.workqueue import Queue
from test.support.poll import wait_for

AFTER_SHUTDOWN = "added after shutdown!"


class TouchRecordingQueue(Queue[str]):
    def __init__(self) -> None:
        super().__init__()
        self.touched: list[str] = []

    def touch(self, item: str) -> None:
        self.touched.append(item)


@pytest.mark.parametrize("drain", [False, True], ids=["shutdown", "shutdown_with_drain"])
def test_basic(drain: bool) -> None:
    q: Queue[str] = Queue()
    errors: list[str] = []

    def produce(i: int) -> None:
        for _ in range(50):
            q.add(str(i))
            time.sleep(0.001)

    def consume() -> None:
        while True:
            item, shutdown = q.get()
            if item == AFTER_SHUTDOWN:
                errors.append("got an item added after shutdown")
            if shutdown:
                return
            assert item is not None
            time.sleep(0.003)
            q.done(item)

    producers = [threading.Thread(target=produce, args=(i,)) for i in range(50)]
    consumers = [threading.Thread(target=consume) for _ in range(10)]
    for t in producers + consumers:
        t.start()
    for t in producers:
        t.join()
    if drain:
        q.shutdown_with_drain()
    else:
        q.shutdown()
    q.add(AFTER_SHUTDOWN)
    for t in consumers:
        t.join()
    assert errors == []
    assert len(q) == 0


def test_add_while_processing() -> None:
    q: Queue[int] = Queue()

    def produce(i: int) -> None:
        q.add(i)

    def consume() -> None:
        counters: dict[int, int] = {}
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item is not None
            counters[item] = counters.get(item, 0) + 1
            if counters[item] < 2:
                q.add(item)
            q.done(item)

    producers = [threading.Thread(target=produce, args=(i,)) for i in range(50)]
    consumers = [threading.Thread(target=consume) for _ in range(10)]
    for t in producers + consumers:
        t.start()
    for t in producers:
        t.join()
    q.shutdown()
    for t in consumers:
        t.join()
    assert len(q) == 0


def test_len() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    assert len(q) == 1
    q.add("bar")
    assert len(q) == 2
    q.add("foo")  # already there
    assert len(q) == 2


def test_reinsert() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add(item)  # while processing
    q.done(item)
    again, shutdown = q.get()
    assert (again, shutdown) == ("foo", False)
    q.done(again)
    assert len(q) == 0


def test_collapse() -> None:
    q = TouchRecordingQueue()
    q.add("bar")
    q.add("bar")
    item, _ = q.get()
    assert item == "bar"
    q.done("bar")
    assert len(q) == 0
    assert q.touched == ["bar"]


def test_collapse_while_processing() -> None:
    q = TouchRecordingQueue()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add("foo")
    q.add("foo")

    got: list[str | None] = []
    second = threading.Thread(target=lambda: got.append(q.get()[0]))
    second.start()
    # The second worker must stay blocked while foo is being processed by the first.
    second.join(0.2)
    assert second.is_alive() and got == []
    q.done("foo")
    second.join(5)
    assert got == ["foo"]
    q.done("foo")
    assert len(q) == 0
    assert q.touched == []  # foo was processing: no Touch


def test_no_item_processed_by_two_workers_at_once() -> None:
    """The core guarantee, checked under contention with many re-adds."""
    q: Queue[int] = Queue()
    active: set[int] = set()
    lock = threading.Lock()
    violations: list[int] = []

    def work() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item is not None
            with lock:
                if item in active:
                    violations.append(item)
                active.add(item)
            time.sleep(0.0005)
            with lock:
                active.discard(item)
            q.done(item)

    workers = [threading.Thread(target=work) for _ in range(8)]
    for t in workers:
        t.start()
    for _ in range(200):
        for i in range(5):
            q.add(i)
        time.sleep(0.0002)
    q.shutdown_with_drain()
    for t in workers:
        t.join()
    assert violations == []


def _start_processing(q: Queue[str], *items: str) -> None:
    for item in items:
        q.add(item)
    for _ in items:
        q.get()


def test_queue_drainage_using_shutdown_with_drain() -> None:
    q: Queue[str] = Queue()
    _start_processing(q, "foo", "bar")
    finished = threading.Event()

    def drain() -> None:
        q.shutdown_with_drain()
        finished.set()

    t = threading.Thread(target=drain)
    t.start()
    wait_for(q.shutting_down, what="shutting down")
    assert q.get() == (None, True)
    assert not finished.wait(0.1)  # still waiting for the two in-flight items
    q.done("foo")
    assert not finished.wait(0.1)
    q.done("bar")
    t.join(5)
    assert finished.is_set()


def test_no_queue_drainage_using_shutdown() -> None:
    q: Queue[str] = Queue()
    _start_processing(q, "foo", "bar")
    t = threading.Thread(target=q.shutdown)
    t.start()
    t.join(5)
    assert not t.is_alive()  # returned although two items are still processing


def test_force_queue_shutdown_using_shutdown() -> None:
    q: Queue[str] = Queue()
    _start_processing(q, "foo", "bar")
    t = threading.Thread(target=q.shutdown_with_drain)
    t.start()
    wait_for(q.shutting_down, what="shutting down")
    t.join(0.1)
    assert t.is_alive()
    q.shutdown()  # cancels the drain wait without any done()
    t.join(5)
    assert not t.is_alive()


def test_queue_drainage_using_shutdown_with_drain_with_dirty_item() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add("foo")  # dirty while processing

    t = threading.Thread(target=q.shutdown_with_drain)
    t.start()
    wait_for(q.shutting_down, what="shutting down")
    assert q.get() == (None, True)

    q.done("foo")  # foo was dirty: it goes back in the queue
    assert q.get() == ("foo", False)
    assert t.is_alive()
    q.done("foo")
    assert q.get() == (None, True)
    t.join(5)
    assert not t.is_alive()


class _Item:
    """Hashable by identity and weak-referenceable."""


def test_garbage_collection() -> None:
    q: Queue[_Item] = Queue()
    item = _Item()
    ref = weakref.ref(item)
    q.add(item)
    got, _ = q.get()
    assert got is item
    q.done(got)
    del item, got
    gc.collect()
    assert ref() is None


def test_shutdown_wakes_blocked_getters() -> None:
    q: Queue[str] = Queue()
    results: list[tuple[str | None, bool]] = []
    getters = [threading.Thread(target=lambda: results.append(q.get())) for _ in range(3)]
    for t in getters:
        t.start()
    q.shutdown()
    for t in getters:
        t.join(5)
    assert results == [(None, True)] * 3


def test_shutdown_hands_out_queued_items_first() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    q.shutdown()
    q.add("c")
    assert q.shutting_down()
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)
