"""LIST then WATCH one collection into a sink, forever, with client-go's recovery rules.

Rules kept from client-go's reflector:
- first LIST at RV "0" (served by the watch cache), later relists at the last synced RV ("not older
  than"), RV "" only after that LIST failed with Expired/too-large RV; pages of 500 when the RV is
  ""/"0", unpaged otherwise; a 410 on a continue page falls back to one unpaged list.
- WATCH from the last synced RV, allowWatchBookmarks, timeoutSeconds random in [300, 600), and a
  client read timeout so a half-open connection cannot hang us.
- 410 on the watch → relist after a backoff; 429 or a failed connection → back off and re-watch
  without relisting; a normal end (server timeout) → re-watch at once; a watch shorter than 1 s with
  no events → relist after a backoff.
- while a watch started at RV ""/"0" is replaying synthetic ADDED events, their RVs are not recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from sriovop.runtime.cache.backoff import Backoff
from sriovop.runtime.cache.trim import note_churn
from sriovop.runtime.client import Client, Selector, WatchStream
from sriovop.runtime.errors import ApiError, ConnectionFailed, Gone, TooManyRequests
from sriovop.runtime.heap import release_free_memory
from sriovop.runtime.kinds import Kind
from sriovop.runtime.objects import freeze_decoded
from sriovop.runtime.rand import RNG

log = structlog.get_logger(__name__)

TRIM_AFTER_LIST_OF = 1000  # objects; smaller lists leave too little behind to be worth a trim


class Sink(Protocol):
    """Where the reflector puts what it learns (the shared informer implements this)."""

    def replace(self, items: list[Any], resource_version: str) -> None: ...
    def add(self, obj: Any) -> None: ...
    def update(self, obj: Any) -> None: ...
    def delete(self, obj: Any) -> None: ...
    def bookmark(self, resource_version: str) -> None: ...


def _is_expired(exc: ApiError) -> bool:
    if isinstance(exc, Gone) or exc.reason in ("Expired", "Gone"):
        return True
    if "too large resource version" in exc.message.lower():
        return True
    return exc.resource_version_too_large


class Reflector:
    def __init__(
        self, client: Client, kind: Kind, sink: Sink, *, namespace: str | None = None,
        label_selector: Selector = None, field_selector: Selector = None, page_size: int = 500,
        min_watch_timeout: int = 300, read_timeout: float | None = None,
        transform: Callable[[Any], Any] = freeze_decoded, backoff: Backoff | None = None,
        name: str | None = None, decode: Callable[[bytes], Any] = json.loads,
    ) -> None:
        self.client = client
        self.kind = kind
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.min_watch_timeout = max(300, min_watch_timeout)
        self.read_timeout = read_timeout
        self.transform = transform
        #: How a watch event's line becomes the event (the client's JSON decoding by default).
        self.decode = decode
        self.backoff = backoff or Backoff()
        self.name = name or f"{kind.plural}/{namespace or '*'}"
        self.last_sync_resource_version = ""
        self._rv_unavailable = False
        self._paginated_at_zero = False
        self._watch: WatchStream | None = None
        #: The last watch ended cleanly (the server's timeout) and the next one is being opened.
        self._resuming = False
        self._watch_lock = threading.Lock()
        self._stop: threading.Event | None = None
        self.lists = 0
        self.watches = 0
        self._log = log.bind(reflector=self.name)

    # -- lifecycle -----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Blocks until `stop` is set; every failure is retried after a backoff."""
        self._stop = stop
        while not stop.is_set():
            try:
                self.list_and_watch(stop)
            except ApiError as exc:
                self._log.warning("list/watch failed", error=str(exc))
            except Exception as exc:  # a bug in a sink must not kill the informer thread
                self._log.error("list/watch crashed", error=repr(exc), exc_info=True)
            if stop.is_set():
                break
            stop.wait(self.backoff.next())

    @property
    def watching(self) -> bool:
        """A watch stream is open right now. False while listing, backing off after a failure and between
        two watches. Waiting for a stream to be open uses this; a reader deciding whether its cache can
        be trusted asks `following`, which also covers the gap between two watches."""
        with self._watch_lock:
            return self._watch is not None

    @property
    def following(self) -> bool:
        """The store follows the server: a watch is open, or one that ended cleanly (the server's
        timeoutSeconds) is being opened again from the last resourceVersion, which misses no event.
        False while listing, after a broken stream or a refused watch and during backoff. A reader that
        must not miss a change asks the server then; between two watches of a quiet cache it need not
        (with `watching`, a periodic reader that met that window made a request it did not need)."""
        with self._watch_lock:
            return self._watch is not None or self._resuming

    def interrupt(self) -> None:
        """Close the current watch so a stopping informer does not wait for the read timeout."""
        with self._watch_lock:
            w = self._watch
        if w is not None:
            w.close()

    # -- list ----------------------------------------------------------------------------------

    def list_and_watch(self, stop: threading.Event) -> None:
        self._list()
        try:
            self._watch_loop(stop)
        finally:  # relisting, failed or stopping: not following until a watch is open again
            with self._watch_lock:
                self._resuming = False

    def _list(self) -> None:
        rv = "" if self._rv_unavailable else (self.last_sync_resource_version or "0")
        try:
            items, list_rv = self._list_at(rv)
        except ApiError as exc:
            if not _is_expired(exc) or rv == "":
                raise
            self._log.info("relist at resourceVersion expired, listing the latest state", rv=rv)
            self._rv_unavailable = True
            items, list_rv = self._list_at("")
        self.lists += 1
        objs = items  # transformed one by one while decoding (list_page's item_transform)
        del items
        count = len(objs)
        self.sink.replace(objs, list_rv)
        del objs
        if count >= TRIM_AFTER_LIST_OF:
            release_free_memory()
        self.last_sync_resource_version = list_rv
        self._rv_unavailable = False

    def _list_at(self, rv: str) -> tuple[list[Any], str]:
        paged = rv in ("", "0") or self._paginated_at_zero
        limit = self.page_size if paged else None
        items: list[Any] = []
        page = self.client.list_page(
            self.kind, self.namespace, label_selector=self.label_selector,
            field_selector=self.field_selector, resource_version=rv or None, limit=limit,
            read_timeout=self.read_timeout, item_transform=self.transform,
        )
        if rv == "0" and page.continue_:
            self._paginated_at_zero = True  # watch cache probably disabled: keep paging later
        items.extend(page.items)
        while page.continue_:
            try:
                page = self.client.list_page(
                    self.kind, self.namespace, label_selector=self.label_selector,
                    field_selector=self.field_selector, limit=limit, continue_=page.continue_,
                    read_timeout=self.read_timeout, item_transform=self.transform,
                )
            except ApiError as exc:
                if not _is_expired(exc):
                    raise
                self._log.info("continue token expired, falling back to one unpaged list", rv=rv)
                page = self.client.list_page(
                    self.kind, self.namespace, label_selector=self.label_selector,
                    field_selector=self.field_selector, resource_version=rv or None,
                    read_timeout=self.read_timeout, item_transform=self.transform,
                )
                return page.items, page.resource_version
            items.extend(page.items)
        return items, page.resource_version

    # -- watch ---------------------------------------------------------------------------------

    def watch_timeout(self) -> int:
        return RNG.randrange(self.min_watch_timeout, 2 * self.min_watch_timeout)

    def _watch_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            start_rv = self.last_sync_resource_version
            try:
                w = self.client.watch(
                    self.kind, self.namespace, resource_version=start_rv or None,
                    label_selector=self.label_selector, field_selector=self.field_selector,
                    timeout_seconds=self.watch_timeout(), allow_bookmarks=True,
                    read_timeout=self.read_timeout, decode=self.decode,
                )
            except (ConnectionFailed, TooManyRequests) as exc:
                with self._watch_lock:
                    self._resuming = False
                self._log.info("cannot open watch, backing off without relist", error=str(exc))
                stop.wait(self.backoff.next())
                continue
            except ApiError as exc:
                if _is_expired(exc):
                    self._log.info("watch resourceVersion expired, relisting", rv=start_rv)
                    return
                raise
            with self._watch_lock:
                self._watch = w
                if stop.is_set():  # interrupt() ran before the watch existed
                    w.close()
                    return
            self.watches += 1
            started = time.monotonic()
            ended = False
            try:
                self._handle(w, start_rv)
                ended = True
            except Gone as exc:
                self._log.info("watch expired (410), relisting", error=str(exc))
                return
            except TooManyRequests as exc:
                self._log.info("watch throttled, backing off", error=str(exc))
                stop.wait(self.backoff.next())
                continue
            except ConnectionFailed as exc:
                if stop.is_set():
                    return
                self._log.info("watch stream broke, re-watching", error=str(exc),
                               rv=self.last_sync_resource_version)
            except ApiError as exc:
                self._log.warning("watch ended with error, relisting", error=str(exc))
                return
            finally:
                short = w.events == 0 and time.monotonic() - started < 1.0
                with self._watch_lock:
                    self._watch = None
                    # Ended at the server's timeout: the next watch resumes where this one stopped.
                    self._resuming = ended and not short and not stop.is_set()
                w.close()
            if stop.is_set():
                return
            if short:
                self._log.info("very short watch with no events, relisting after backoff")
                return

    def _handle(self, w: WatchStream, start_rv: str) -> None:
        sink = self.sink
        record = start_rv not in ("", "0")
        transform = self.transform
        for etype, raw in w:
            obj = transform(raw) if etype != "BOOKMARK" else raw
            rv = obj["metadata"].get("resourceVersion", "")
            if etype == "ADDED":
                sink.add(obj)
            elif etype == "MODIFIED":
                sink.update(obj)
                record = True
                note_churn()
            elif etype == "DELETED":
                sink.delete(obj)
                record = True
                note_churn()
            elif etype == "BOOKMARK":
                sink.bookmark(rv)
                record = True
            else:
                self._log.warning("unknown watch event type", type=etype)
                continue
            if record and rv:
                self.last_sync_resource_version = rv
