"""One watch per collection for a whole daemons process, fanned out to each hollow daemon's informers.

Every config daemon opens three watches, each narrowed to its own node by a field selector (its
NodeState by `metadata.name`, its device-plugin pods by `spec.nodeName`, the operator config by
name). A worker process running a hundred daemons would hold three hundred TLS connections and
watch streams, and the API server would match every NodeState event against every daemon's
selector. `FanoutClient` is the API client those daemons are given instead (the daemon takes its
client by injection and is otherwise unchanged): it is a `Client` on one shared connection pool, and
its cache reads - a LIST at resourceVersion "0" or at a synced resourceVersion, and a WATCH - of a
collection whose field selector is one equality on a name or a node name are answered from one
`Hub` per collection, which lists and watches the whole collection once for the process. Every
other request (gets, live lists, writes) goes to the API server as before.

A process may name the objects its daemons will ask for by name (`FanoutClient(..., names=...)`: the
slice's NodeStates). That hub then keeps only those: a watch event of any other object is not decoded
(`NameFilter`), so that the fleet's cost per event does not grow with its number of processes. A
daemon asking for a name outside them is served by the API server.

What a daemon's reflector sees is what the API server would send it: the matching objects and
events in resourceVersion order, a 410 when it asks to resume from older than the hub remembers (it
relists from the hub), and a broken stream while the hub's own watch is down (it backs off and
reads live meanwhile, as during an API server outage).
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import structlog

from sriovop.runtime.cache.reflector import Reflector
from sriovop.runtime.client import Client, ListPage, Selector, selector_string
from sriovop.runtime.config import RestConfig
from sriovop.runtime.errors import ConnectionFailed, Gone
from sriovop.runtime.kinds import Kind
from sriovop.runtime.objects import thaw

log = structlog.get_logger(__name__)

#: Field selectors a hub can answer: one equality on one of these paths.
FIELDS = {"metadata.name": ("metadata", "name"), "spec.nodeName": ("spec", "nodeName")}
#: Events a hub keeps so a daemon's watch can resume from a recent resourceVersion.
HISTORY = 4096
#: How long a list waits for its hub's first sync or for the hub to reach the asked resourceVersion.
SYNC_WAIT = 60.0
#: How often a hub looks whether its own watch still follows the server (`Hub.break_streams_if_down`).
BREAK_CHECK = 5.0
#: Put on a subscriber's queue when the hub's own watch is down: its stream raises ConnectionFailed.
_BROKEN = ("BROKEN", None)


def _rv(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _field(obj: Mapping[str, Any], path: tuple[str, str]) -> Any:
    return (obj.get(path[0]) or {}).get(path[1])


#: Found in a watch event's line without decoding it: the event's type (the line's first key), every
#: JSON key "name" with its value, every key "resourceVersion" with its value. Inside a JSON string a
#: quote is escaped, so an annotation holding JSON cannot produce a match.
_EVENT_TYPE = re.compile(rb'\{"type":"([A-Z]+)"')
_NAME = re.compile(rb'"name":"([^"\\]*)"')
_RESOURCE_VERSION = re.compile(rb'"resourceVersion":"([0-9]+)"')
_OBJECT_EVENTS = (b"ADDED", b"MODIFIED", b"DELETED")


class NameFilter:
    """A hub's watch decoding when it serves only some names: an event of an object that is not one of
    them becomes a stub carrying only its resourceVersion (which the hub's own watch resumes from),
    found with three regular expressions instead of decoding the whole line.

    Conservative: the line is decoded whenever any "name" key in it (metadata's, an owner's, an
    interface's) is one of the names, when it holds other than exactly one resourceVersion, and for
    bookmarks, errors and lines of another shape. A stub never stands for an object a daemon asked for.
    """

    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(n.encode() for n in names)
        self.skipped = 0

    def serves(self, name: str) -> bool:
        return name.encode() in self.names

    def __call__(self, line: bytes) -> Any:
        head = _EVENT_TYPE.match(line)
        if head is None or head.group(1) not in _OBJECT_EVENTS:
            return json.loads(line)
        if not self.names.isdisjoint(_NAME.findall(line)):
            return json.loads(line)
        versions = _RESOURCE_VERSION.findall(line)
        if len(versions) != 1:
            return json.loads(line)
        self.skipped += 1
        return {"type": head.group(1).decode(), "object": {"metadata": {"resourceVersion": versions[0].decode()}}}


def _is_stub(obj: Mapping[str, Any]) -> bool:
    return "name" not in obj["metadata"]


class _Subscriber:
    """One daemon's watch on a hub: a queue of matching events; None ends the stream."""

    def __init__(self, path: tuple[str, str], value: str) -> None:
        self.path = path
        self.value = value
        self.events: queue.SimpleQueue[tuple[str, Any] | None] = queue.SimpleQueue()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return bool(_field(obj, self.path) == self.value)


class Hub:
    """LIST+WATCH of one collection for every daemon of the process (the sink of one reflector)."""

    def __init__(self, client: Client, kind: Kind, namespace: str | None, label_selector: str | None,
                 names: Collection[str] | None = None) -> None:
        self.kind = kind
        #: Keeps only the names given, and its watch decodes only their events (None: every object).
        self.name_filter = NameFilter(names) if names is not None else None
        self._lock = threading.Condition()
        self._objects: dict[str, Any] = {}
        self._rv = 0
        self._synced = False
        self._history: deque[tuple[int, str, Any]] = deque(maxlen=HISTORY)
        self._oldest = 0  # events at or below this resourceVersion may have left the history
        self._subscribers: set[_Subscriber] = set()
        self.reflector = Reflector(client, kind, self, namespace=namespace, label_selector=label_selector,
                                   transform=lambda o: o, name=f"hub-{kind.plural}/{namespace or '*'}",
                                   decode=self.name_filter or json.loads)

    def start(self, stop: threading.Event) -> None:
        threading.Thread(target=self.reflector.run, args=(stop,), name=f"hub-{self.kind.plural}", daemon=True).start()
        threading.Thread(target=self.check_following, args=(stop,), name=f"hub-check-{self.kind.plural}",
                         daemon=True).start()

    def check_following(self, stop: threading.Event) -> None:
        """Every BREAK_CHECK seconds until `stop`: `break_streams_if_down`."""
        while not stop.wait(BREAK_CHECK):
            self.break_streams_if_down()

    def break_streams_if_down(self) -> int:
        """End every daemon's stream with ConnectionFailed when the hub's own watch does not follow the
        server (their reflectors back off and read live meanwhile, as in an API server outage); the
        number of streams broken.

        One check per hub every BREAK_CHECK seconds, instead of each stream waking every 5 s to look:
        a daemons process of 100 had 300 stream threads waking 12 times a minute, more than half of
        its context switches at rest, each needing the process's GIL."""
        if self.reflector.following:
            return 0
        with self._lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            sub.events.put(_BROKEN)
        return len(subscribers)

    def stop(self) -> None:
        self.reflector.interrupt()
        with self._lock:
            for sub in self._subscribers:
                sub.events.put(None)

    # -- the reflector's sink ----------------------------------------------------------------------
    def replace(self, items: list[Any], resource_version: str) -> None:
        new = {_key(o): o for o in items if self.serves(o["metadata"]["name"])}
        with self._lock:
            for key, old in self._objects.items():
                if key not in new:
                    self._publish("DELETED", old)
            for key, obj in new.items():
                old = self._objects.get(key)
                if old is None:
                    self._publish("ADDED", obj)
                elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                    self._publish("MODIFIED", obj)
            self._objects = new
            self._advance(resource_version)
            self._synced = True
            self._lock.notify_all()

    def add(self, obj: Any) -> None:
        self._event("ADDED", obj)

    def update(self, obj: Any) -> None:
        self._event("MODIFIED", obj)

    def delete(self, obj: Any) -> None:
        self._event("DELETED", obj)

    def bookmark(self, resource_version: str) -> None:
        with self._lock:
            self._advance(resource_version)
            mark = {"metadata": {"resourceVersion": str(self._rv)}}
            for sub in self._subscribers:
                sub.events.put(("BOOKMARK", mark))
            self._lock.notify_all()

    def serves(self, name: str) -> bool:
        return self.name_filter is None or self.name_filter.serves(name)

    def _event(self, etype: str, obj: Any) -> None:
        with self._lock:
            if _is_stub(obj) or not self.serves(obj["metadata"]["name"]):  # another process's object
                self._advance(obj["metadata"].get("resourceVersion"))
                self._lock.notify_all()
                return
            if etype == "DELETED":
                self._objects.pop(_key(obj), None)
            else:
                self._objects[_key(obj)] = obj
            self._publish(etype, obj)
            self._advance(obj["metadata"].get("resourceVersion"))
            self._lock.notify_all()

    def _publish(self, etype: str, obj: Any) -> None:
        rv = _rv(obj["metadata"].get("resourceVersion"))
        if len(self._history) == self._history.maxlen:
            self._oldest = self._history[0][0]
        self._history.append((rv, etype, obj))
        for sub in self._subscribers:
            if sub.matches(obj):
                sub.events.put((etype, thaw(obj)))

    def _advance(self, resource_version: Any) -> None:
        self._rv = max(self._rv, _rv(resource_version))

    # -- what the daemons' reflectors ask ----------------------------------------------------------
    def list(self, path: tuple[str, str], value: str, resource_version: str) -> ListPage:
        want = _rv(resource_version)
        deadline = time.monotonic() + SYNC_WAIT
        with self._lock:
            while not self._synced or self._rv < want:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConnectionFailed(f"{self.kind.plural}: the process's shared watch has not synced",
                                           timeout=True)
                self._lock.wait(min(left, 1.0))
            items = [thaw(o) for o in self._objects.values() if _field(o, path) == value]
            return ListPage(items, str(self._rv), "")

    def watch(self, path: tuple[str, str], value: str, resource_version: str | None,
              timeout_seconds: int | None) -> HubStream:
        if not self.reflector.following:
            raise ConnectionFailed(f"{self.kind.plural}: the process's shared watch is not open")
        since = _rv(resource_version)
        sub = _Subscriber(path, value)
        with self._lock:
            if since and since < self._oldest:
                raise Gone(410, f"{self.kind.plural}: too old resource version: {since} ({self._oldest})")
            for rv, etype, obj in self._history:
                if rv > since and sub.matches(obj):
                    sub.events.put((etype, thaw(obj)))
            self._subscribers.add(sub)
        return HubStream(self, sub, timeout_seconds)

    def unsubscribe(self, sub: _Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(sub)


class HubStream:
    """A daemon's watch served by a hub; quacks like `WatchStream` (iterate, `close()`, `events`)."""

    def __init__(self, hub: Hub, sub: _Subscriber, timeout_seconds: int | None) -> None:
        self._hub = hub
        self._sub = sub
        self._end = time.monotonic() + (timeout_seconds or 1800)
        self._closed = False
        self.events = 0

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        try:
            while not self._closed:
                left = self._end - time.monotonic()
                if left <= 0:
                    return  # the server's timeoutSeconds: a normal end, re-watched at once
                try:
                    item = self._sub.events.get(timeout=left)
                except queue.Empty:
                    return  # the server's timeoutSeconds, as above
                if item is None:
                    return
                if item is _BROKEN:
                    raise ConnectionFailed(f"{self._hub.kind.plural}: the process's shared watch broke")
                self.events += 1
                yield item
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._hub.unsubscribe(self._sub)
            self._sub.events.put(None)


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}/{meta['name']}"


def _one_equality(selector: Selector) -> tuple[tuple[str, str], str] | None:
    """`{"metadata.name": "x"}` or `"spec.nodeName=x"` → (path, value); anything else None."""
    text = selector_string(selector)
    if not text or "," in text or "!=" in text or "==" in text:
        return None
    field, _, value = text.partition("=")
    path = FIELDS.get(field)
    return (path, value) if path is not None and value else None


class FanoutClient(Client):
    """A `Client` for every daemon of a process: one connection pool, one watch per collection."""

    def __init__(self, config: RestConfig, names: Mapping[str, Collection[str]] | None = None) -> None:
        """`names`: per resource (its plural), the only object names its daemons will ask for by
        `metadata.name`; that collection's hubs keep and decode only those."""
        super().__init__(config)
        self._names = {plural: frozenset(values) for plural, values in (names or {}).items()}
        self._hubs: dict[tuple[str, str | None, str | None], Hub] = {}
        self._hubs_lock = threading.Lock()
        self._stop = threading.Event()

    def _hub(self, kind: Kind, namespace: str | None, label_selector: Selector) -> Hub:
        key = (kind.plural, namespace, selector_string(label_selector))
        with self._hubs_lock:
            hub = self._hubs.get(key)
            if hub is None:
                # the hub's own requests go through a plain Client on the same pool
                hub = self._hubs[key] = Hub(self._plain(), kind, namespace, key[2], self._names.get(kind.plural))
                hub.start(self._stop)
            return hub

    def _answers(self, kind: Kind, field_selector: Selector) -> tuple[tuple[str, str], str] | None:
        """The equality a hub of this process answers, or None: the API server answers."""
        eq = _one_equality(field_selector)
        if eq is None:
            return None
        names = self._names.get(kind.plural)
        if names is not None and (eq[0] != FIELDS["metadata.name"] or eq[1] not in names):
            return None  # that hub holds only the declared names
        return eq

    def _plain(self) -> Client:
        plain = Client.__new__(Client)
        plain.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_hub")})
        return plain

    def hubs(self) -> int:
        with self._hubs_lock:
            return len(self._hubs)

    def list_page(self, kind: Kind, namespace: str | None = None, *, label_selector: Selector = None,
                  field_selector: Selector = None, resource_version: str | None = None, limit: int | None = None,
                  continue_: str | None = None, decode: Callable[[bytes], Any] | None = None,
                  read_timeout: float | None = None, item_transform: Callable[[Any], Any] | None = None,
                  resource_version_match: str | None = None) -> ListPage:
        eq = self._answers(kind, field_selector)
        if eq is None or not resource_version or continue_ or resource_version_match:  # live: the server answers
            kw: dict[str, Any] = {} if decode is None else {"decode": decode}
            return super().list_page(kind, namespace, label_selector=label_selector, field_selector=field_selector,
                                     resource_version=resource_version, limit=limit, continue_=continue_,
                                     read_timeout=read_timeout, item_transform=item_transform,
                                     resource_version_match=resource_version_match, **kw)
        page = self._hub(kind, namespace, label_selector).list(eq[0], eq[1], resource_version)
        if item_transform is not None:
            page.items = [item_transform(o) for o in page.items]
        return page

    def watch(self, kind: Kind, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: Selector = None, field_selector: Selector = None, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True, read_timeout: float | None = None,
              decode: Callable[[bytes], Any] | None = None) -> Any:
        eq = self._answers(kind, field_selector)
        if eq is None or not resource_version or resource_version == "0":
            kw: dict[str, Any] = {} if decode is None else {"decode": decode}
            return super().watch(kind, namespace, resource_version=resource_version, label_selector=label_selector,
                                 field_selector=field_selector, timeout_seconds=timeout_seconds,
                                 allow_bookmarks=allow_bookmarks, read_timeout=read_timeout, **kw)
        return self._hub(kind, namespace, label_selector).watch(eq[0], eq[1], resource_version, timeout_seconds)

    def close(self) -> None:
        """Stops the hubs and closes the shared pool: only once every daemon of the process stopped."""
        self._stop.set()
        with self._hubs_lock:
            for hub in self._hubs.values():
                hub.stop()
        super().close()
