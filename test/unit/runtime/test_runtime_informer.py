"""Shared-informer delivery rules against a scripted fake client (pure logic; the real-server
behaviour is in test/integration/runtime)."""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import pytest

from sriovop.runtime.cache import DeletedFinalStateUnknown, FuncHandler, InformerStopped, SharedIndexInformer
from sriovop.runtime.client import Client, ListPage
from sriovop.runtime.kinds import CONFIG_MAP
from sriovop.runtime.objects import FrozenDict
from test.support.runtime_fakes import FakeClient, FakeWatch, cm


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def handler(self) -> FuncHandler:
        def name(o: Any) -> str:
            return o.key if isinstance(o, DeletedFinalStateUnknown) else o["metadata"]["name"]
        return FuncHandler(
            add=lambda o, initial: self._rec("add", name(o), o["metadata"]["resourceVersion"], initial),
            update=lambda old, new: self._rec("update", name(new), new["metadata"]["resourceVersion"]),
            delete=lambda o: self._rec("delete", name(o), isinstance(o, DeletedFinalStateUnknown)),
        )

    def _rec(self, *ev: Any) -> None:
        with self.lock:
            self.events.append(ev)

    def wait_for(self, n: int, timeout: float = 5.0) -> list[tuple[Any, ...]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.events) >= n:
                    return list(self.events)
            time.sleep(0.005)
        return list(self.events)


def informer(fake: FakeClient, **kw: Any) -> SharedIndexInformer:
    return SharedIndexInformer(cast(Client, fake), CONFIG_MAP, namespace="ns", **kw)


def test_relist_diff_tombstones_updates_and_silence_for_unchanged() -> None:
    inf = informer(FakeClient())
    rec = Recorder()
    reg = inf.add_event_handler(rec.handler())
    reg.start()
    inf.replace([cm("a", "1"), cm("b", "1"), cm("c", "1")], "1")
    inf.replace([cm("b", "2"), cm("c", "1"), cm("d", "3")], "3")
    events = rec.wait_for(6)
    assert events == [("add", "a", "1", True), ("add", "b", "1", True), ("add", "c", "1", True),
                      ("delete", "ns/a", True), ("update", "b", "2"), ("add", "d", "3", False)]
    assert sorted(inf.store.list_keys()) == ["ns/b", "ns/c", "ns/d"]
    inf.stop()


def test_cache_is_updated_before_handlers_run() -> None:
    inf = informer(FakeClient())
    seen: list[Any] = []
    inf.add_event_handler(FuncHandler(
        add=lambda o, _i: seen.append(inf.store.get(o) is not None),
        delete=lambda o: seen.append(inf.store.get(o) is None),
    )).start()
    inf.replace([], "1")
    deadline = time.monotonic() + 5
    inf.add(cm("a", "2"))
    while len(seen) < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    inf.delete(cm("a", "3"))
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert seen == [True, True]
    inf.stop()


def test_late_handler_gets_current_contents_then_live_events_and_per_handler_sync() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([cm("a", "1"), cm("b", "2")], "2", ""))
    gate = threading.Event()
    fake.watches.append(FakeWatch([("ADDED", cm("c", "3"))], block=True))
    inf = informer(fake)
    stop = threading.Event()
    early = Recorder()
    inf.add_event_handler(early.handler())
    inf.start(stop)
    assert inf.wait_for_cache_sync(5)
    early.wait_for(3)
    assert all(isinstance(o, FrozenDict) for o in inf.store.list())  # listed and watched objects alike
    late = Recorder()
    reg = inf.add_event_handler(late.handler())
    assert late.wait_for(3) == [("add", "a", "1", True), ("add", "b", "2", True), ("add", "c", "3", True)]
    deadline = time.monotonic() + 5
    while not reg.has_synced() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reg.has_synced()
    inf.add(cm("d", "4"))  # what the watch would deliver next
    assert late.wait_for(4)[-1] == ("add", "d", "4", False)
    assert early.wait_for(4) == [("add", "a", "1", True), ("add", "b", "2", True), ("add", "c", "3", False),
                                 ("add", "d", "4", False)]
    gate.set()
    stop.set()
    inf.stop()
    with pytest.raises(InformerStopped):
        inf.add_event_handler(Recorder().handler())


def test_slow_handler_does_not_delay_others_and_order_is_kept() -> None:
    inf = informer(FakeClient())
    slow, fast = Recorder(), Recorder()
    release = threading.Event()
    h = slow.handler()
    orig = h.update

    def slow_update(old: Any, new: Any) -> None:
        release.wait(5)
        assert orig is not None
        orig(old, new)

    h.update = slow_update
    inf.add_event_handler(h).start()
    inf.add_event_handler(fast.handler()).start()
    inf.replace([cm("a", "1")], "1")
    for rv in range(2, 200):
        inf.update(cm("a", str(rv)))
    assert len(fast.wait_for(199)) == 199
    assert len(slow.events) <= 1
    release.set()
    events = slow.wait_for(199)
    assert [e[2] for e in events] == [str(rv) for rv in range(1, 200)]
    inf.stop()


def test_resync_replays_cache_only_to_handlers_due() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([cm("a", "1")], "1", ""))
    inf = informer(fake)
    every, never = Recorder(), Recorder()
    inf.add_event_handler(every.handler(), resync_period=1.0)
    inf.add_event_handler(never.handler(), resync_period=0)
    assert inf.resync_check_period == 1.0
    stop = threading.Event()
    inf.start(stop)
    events = every.wait_for(3, timeout=6)
    assert events[:3] == [("add", "a", "1", True), ("update", "a", "1"), ("update", "a", "1")]
    assert never.events == [("add", "a", "1", True)]
    stop.set()
    inf.stop()


def test_transform_applies_to_listed_and_watched_objects_before_they_are_cached() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([cm("a", "5", big="x" * 100, kept="y")], "10", ""))
    fake.watches.append(FakeWatch([("ADDED", cm("b", "11", big="x", kept="z"))], block=True))

    def drop_big(obj: dict[str, Any]) -> dict[str, Any]:
        obj["data"].pop("big", None)
        return obj

    inf = informer(fake, transform=drop_big)
    stop = threading.Event()
    inf.start(stop)
    try:
        assert inf.wait_for_cache_sync(10, stop)
        deadline = time.monotonic() + 10
        while inf.store.get_by_key("ns/b") is None and time.monotonic() < deadline:
            time.sleep(0.01)
        a, b = inf.store.get_by_key("ns/a"), inf.store.get_by_key("ns/b")
        assert a["data"] == {"kept": "y"} and b["data"] == {"kept": "z"}
        assert isinstance(a, FrozenDict) and isinstance(b["data"], FrozenDict)
    finally:
        stop.set()
        inf.stop()
