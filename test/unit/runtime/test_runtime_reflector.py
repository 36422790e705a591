"""Reflector rules ported from client-go's reflector_test.go, against a scripted fake client."""

from __future__ import annotations

import threading
from typing import Any, cast

from sriovop.runtime.cache import Backoff, Reflector
from sriovop.runtime.client import Client, ListPage
from sriovop.runtime.errors import ConnectionFailed, Gone, TooManyRequests
from sriovop.runtime.kinds import CONFIG_MAP
from test.support.runtime_fakes import FakeClient, FakeWatch, cm


class RecordingSink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def replace(self, items: list[Any], rv: str) -> None:
        self.calls.append(("replace", ([i["metadata"]["name"] for i in items], rv)))

    def add(self, obj: Any) -> None:
        self.calls.append(("add", obj["metadata"]["name"]))

    def update(self, obj: Any) -> None:
        self.calls.append(("update", obj["metadata"]["name"]))

    def delete(self, obj: Any) -> None:
        self.calls.append(("delete", obj["metadata"]["name"]))

    def bookmark(self, rv: str) -> None:
        self.calls.append(("bookmark", rv))


def make(fake: FakeClient, **kw: Any) -> tuple[Reflector, RecordingSink]:
    sink = RecordingSink()
    r = Reflector(cast(Client, fake), CONFIG_MAP, sink, namespace="ns",
                  backoff=Backoff(initial=0.001, cap=0.002), **kw)
    return r, sink


def gone() -> Gone:
    return Gone(410, "too old resource version", {"reason": "Expired", "code": 410})


def test_list_then_watch_from_list_rv_and_rewatch_from_last_event_rv() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([cm("a", "5")], "10", ""))
    fake.watches.append(FakeWatch([("ADDED", cm("b", "11")), ("MODIFIED", cm("b", "12"))]))
    fake.watches.append(FakeWatch([("DELETED", cm("a", "13")), ("BOOKMARK", cm("", "20"))]))
    r, sink = make(fake)
    stop = threading.Event()
    fake.watches.append(FakeWatch([("MODIFIED", cm("b", "21"))], error=ConnectionFailed("stream broke")))
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    deadline = 200
    while len(fake.watch_calls) < 4 and deadline:
        stop.wait(0.01)
        deadline -= 1
    stop.set()
    r.interrupt()
    t.join(2)
    assert [c["resource_version"] for c in fake.list_calls] == ["0"]
    assert [c["resource_version"] for c in fake.watch_calls[:4]] == ["10", "12", "20", "21"]
    assert all(300 <= c["timeout_seconds"] < 600 and c["allow_bookmarks"] for c in fake.watch_calls)
    assert sink.calls == [("replace", (["a"], "10")), ("add", "b"), ("update", "b"), ("delete", "a"),
                          ("bookmark", "20"), ("update", "b")]


def test_expired_exact_resource_version_relists_latest() -> None:
    """Lists at "0", then "10" (Expired), then "" — client-go TestReflectorExpiredExactResourceVersion."""
    fake = FakeClient()
    fake.lists.append(ListPage([cm(f"o{i}", "1") for i in range(4)], "10", ""))
    fake.lists.append(gone())
    fake.lists.append(ListPage([cm(f"o{i}", "1") for i in range(8)], "20", ""))
    r, sink = make(fake)
    r._list()
    r._list()
    assert [c["resource_version"] for c in fake.list_calls] == ["0", "10", None]
    assert sink.calls[-1] == ("replace", ([f"o{i}" for i in range(8)], "20"))
    assert r.last_sync_resource_version == "20"


def test_full_list_if_continue_expired() -> None:
    """A 410 on a continue page falls back to one unpaged list at the original RV."""
    fake = FakeClient()
    fake.lists.append(ListPage([cm("a", "1")], "10", "tok0"))       # RV "0", paginated
    fake.lists.append(ListPage([cm("b", "1")], "10", ""))
    fake.lists.append(ListPage([cm("a", "1")], "10", "tok1"))        # relist at "10", page 1
    fake.lists.append(gone())                                         # continue expired
    fake.lists.append(ListPage([cm("a", "1"), cm("b", "1")], "11", ""))
    r, sink = make(fake, page_size=1)
    r._list()
    assert sink.calls[-1] == ("replace", (["a", "b"], "10"))
    r._list()
    calls = [(c.get("resource_version"), c.get("limit"), c.get("continue_")) for c in fake.list_calls]
    assert calls == [("0", 1, None), (None, 1, "tok0"), ("10", 1, None), (None, 1, "tok1"), ("10", None, None)]
    assert sink.calls[-1] == ("replace", (["a", "b"], "11"))


def test_no_paging_at_specific_rv_when_watch_cache_serves_rv0() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([cm("a", "1")], "10", ""))
    fake.lists.append(ListPage([cm("a", "1")], "12", ""))
    r, _ = make(fake)
    r._list()
    r._list()
    assert [(c["resource_version"], c.get("limit")) for c in fake.list_calls] == [("0", 500), ("10", None)]


def test_no_relist_on_too_many_requests_or_refused_watch() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([], "10", ""))
    fake.watches.extend([TooManyRequests(429, "slow down"), ConnectionFailed("refused", refused=True),
                         FakeWatch([("ADDED", cm("a", "11"))], error=TooManyRequests(429, "again"))])
    r, _sink = make(fake)
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    for _ in range(300):
        if len(fake.watch_calls) >= 4:
            break
        stop.wait(0.01)
    stop.set()
    r.interrupt()
    t.join(2)
    assert len(fake.list_calls) == 1
    assert [c["resource_version"] for c in fake.watch_calls[:4]] == ["10", "10", "10", "11"]


def test_watch_gone_relists_at_last_synced_rv() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([], "10", ""))
    fake.watches.append(FakeWatch([("MODIFIED", cm("a", "15"))], error=gone()))
    fake.lists.append(ListPage([cm("a", "16")], "16", ""))
    r, _sink = make(fake)
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    for _ in range(300):
        if len(fake.list_calls) >= 2 and len(fake.watch_calls) >= 2:
            break
        stop.wait(0.01)
    stop.set()
    r.interrupt()
    t.join(2)
    assert [c["resource_version"] for c in fake.list_calls[:2]] == ["0", "15"]
    assert fake.watch_calls[1]["resource_version"] == "16"


def test_synthetic_added_rvs_not_recorded_until_first_non_added() -> None:
    fake = FakeClient()
    r, _sink = make(fake)
    r.last_sync_resource_version = "0"
    r._handle(FakeWatch([("ADDED", cm("a", "7")), ("ADDED", cm("b", "3"))]), "0")  # type: ignore[arg-type]
    assert r.last_sync_resource_version == "0"
    r._handle(FakeWatch([("ADDED", cm("c", "5")), ("MODIFIED", cm("a", "9")),  # type: ignore[arg-type]
                         ("ADDED", cm("d", "10"))]), "0")
    assert r.last_sync_resource_version == "10"
    r._handle(FakeWatch([("ADDED", cm("e", "12"))]), "10")  # type: ignore[arg-type]
    assert r.last_sync_resource_version == "12"


def test_very_short_empty_watch_relists() -> None:
    fake = FakeClient()
    fake.lists.append(ListPage([], "10", ""))
    fake.watches.append(FakeWatch([]))  # ends at once with no events
    r, _ = make(fake)
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    for _ in range(300):
        if len(fake.list_calls) >= 2:
            break
        stop.wait(0.01)
    stop.set()
    r.interrupt()
    t.join(2)
    assert [c["resource_version"] for c in fake.list_calls[:2]] == ["0", "10"]


class WindowClient(FakeClient):
    """Records what the reflector says of itself each time it opens a watch: the window between two
    watches, as a reader on another thread would see it."""

    def __init__(self) -> None:
        super().__init__()
        self.reflector: Reflector | None = None
        self.seen: list[tuple[bool, bool]] = []

    def watch(self, kind: Any, namespace: Any = None, **kw: Any) -> FakeWatch:
        assert self.reflector is not None
        self.seen.append((self.reflector.watching, self.reflector.following))
        return super().watch(kind, namespace, **kw)


def test_following_between_two_watches_only_after_a_clean_end() -> None:
    """A watch that ended at the server's timeout is re-opened from its last resourceVersion, so the
    store still follows the server meanwhile; after a broken stream, a refused watch or while stopped it
    does not (the daemon's periodic pass then reads live)."""
    fake = WindowClient()
    fake.lists.append(ListPage([], "10", ""))
    fake.watches.extend([
        FakeWatch([("ADDED", cm("a", "11"))]),  # ends cleanly: the server's timeoutSeconds
        FakeWatch([("MODIFIED", cm("a", "12"))], error=ConnectionFailed("stream broke")),
        ConnectionFailed("refused", refused=True),
    ])  # then a watch that stays open
    r, _sink = make(fake)
    fake.reflector = r
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    for _ in range(500):
        if r.watching and len(fake.seen) >= 4:
            break
        stop.wait(0.01)
    open_now = (r.watching, r.following)
    stop.set()
    r.interrupt()
    t.join(2)
    # (watching, following) as each watch was being opened: after the list, after the clean end, after
    # the broken stream, after the refused watch
    assert fake.seen[:4] == [(False, False), (False, True), (False, False), (False, False)]
    assert open_now == (True, True)
    assert not r.following
