"""A shared informer: one reflector feeding one indexed store and any number of handlers.

The reflector thread applies each change to the store and then queues it for every handler, under
one lock, so the cache is always updated before handlers hear about a change, a handler added late
gets exactly the current contents as adds (nothing missed, nothing twice), and each handler sees
changes in the order the cache applied them (client-go's RealFIFO, atomic mode, with the FIFO and
the apply step fused because the reflector thread is the only writer).

Relists are diffed against the store: deletions first (as tombstones, DeletedFinalStateUnknown),
then adds and updates in list order; objects whose resourceVersion did not change are not announced.
Resync replays the cache to handlers whose resync period is due, as update(obj, obj).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import structlog

from sriovop.runtime.cache.compact import CompactStore
from sriovop.runtime.cache.keys import DeletedFinalStateUnknown, meta_namespace_key
from sriovop.runtime.cache.listener import ADD, DELETE, UPDATE, EventHandler, Listener
from sriovop.runtime.cache.reflector import Reflector
from sriovop.runtime.cache.store import NAMESPACE_INDEX, IndexFunc, Store, namespace_index
from sriovop.runtime.client import Client, Selector
from sriovop.runtime.kinds import Kind
from sriovop.runtime.objects import freeze_decoded

log = structlog.get_logger(__name__)

MIN_RESYNC = 1.0


class InformerStopped(RuntimeError):
    pass


class SharedIndexInformer:
    """Watch one (kind, namespace, selectors) and keep an indexed, read-only cache of it.

    ```
    inf = SharedIndexInformer(client, CONFIG_MAP, namespace="ns")
    inf.add_event_handler(FuncHandler(add=lambda o, initial: ..., delete=lambda o: ...))
    stop = threading.Event(); inf.start(stop)
    inf.wait_for_cache_sync(timeout=30)
    inf.store.by_index("namespace", "ns")
    ```
    """

    def __init__(
        self, client: Client, kind: Kind, *, namespace: str | None = None, label_selector: Selector = None,
        field_selector: Selector = None, resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None, read_timeout: float | None = None,
        strip_managed_fields: bool = True, page_size: int = 500, min_watch_timeout: int = 300,
        compact: bool = False, transform: Transform | None = None,
    ) -> None:
        """`transform` (client-go's SetTransform): applied to each freshly decoded, still mutable object
        (listed or watched) before it is frozen and cached; it may change it in place and returns what
        is cached. Use it to drop fields no handler or reader of this informer reads."""
        self.kind = kind
        self.namespace = namespace
        all_indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        all_indexers.update(indexers or {})
        self.store = CompactStore(all_indexers) if compact else Store(all_indexers)
        self.name = f"{kind.plural}.{kind.group or 'core'}/{namespace or '*'}"
        self.reflector = Reflector(
            client, kind, self, namespace=namespace, label_selector=label_selector,
            field_selector=field_selector, page_size=page_size, read_timeout=read_timeout,
            transform=partial(_decoded, transform=transform, strip_managed_fields=strip_managed_fields),
            min_watch_timeout=min_watch_timeout, name=self.name,
        )
        self._lock = threading.RLock()  # serialises store changes with handler registration
        self._listeners: list[Listener] = []
        self._synced = threading.Event()
        self._started = False
        self._stopped = False
        self._stop: threading.Event | None = None
        self._threads: list[threading.Thread] = []
        self.default_resync = _clamp_resync(resync_period)
        self._resync_check = self.default_resync
        self._first_replace_done = False

    # -- handlers ------------------------------------------------------------------------------

    def add_event_handler(self, handler: EventHandler, resync_period: float | None = None) -> Listener:
        """Register a handler; if the informer already runs it first gets every cached object as an
        initial-list add. Returns the registration (its `has_synced()` is per handler)."""
        period = self.default_resync if resync_period is None else _clamp_resync(resync_period)
        with self._lock:
            if self._stopped:
                raise InformerStopped(f"informer {self.name} is stopped; cannot add a handler")
            if period and self._resync_check and period < self._resync_check:
                if self._started:
                    period = self._resync_check
                else:
                    self._resync_check = period
            elif period and not self._resync_check and not self._started:
                self._resync_check = period
            listener = Listener(handler, period, self.has_synced, f"{self.name}-{len(self._listeners)}")
            self._listeners.append(listener)
            if self._started:
                listener.start()
            for obj in self.store.list():
                listener.add(ADD, None, obj, True)
            return listener

    def remove_event_handler(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
        listener.stop()

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        if self._stopped:
            raise InformerStopped(f"informer {self.name} is stopped")
        with self._lock:
            self.store.add_indexers(indexers)

    # -- lifecycle -----------------------------------------------------------------------------

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_cache_sync(self, timeout: float | None = None, stop: threading.Event | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._synced.is_set():
                return True
            if stop is not None and stop.is_set():
                return False
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._synced.wait(0.1 if remaining is None else min(0.1, remaining))

    def start(self, stop: threading.Event) -> None:
        """Start the reflector (and resync) threads; returns at once. Set `stop` to end them."""
        with self._lock:
            if self._started:
                return
            if self._stopped:
                raise InformerStopped(f"informer {self.name} was stopped and cannot restart")
            self._started = True
            self._stop = stop
            for listener in self._listeners:
                listener.start()
        t = threading.Thread(target=self._run_reflector, args=(stop,), name=f"reflector-{self.name}",
                             daemon=True)
        self._threads.append(t)
        t.start()
        if self._resync_check:
            r = threading.Thread(target=self._resync_loop, args=(stop,), name=f"resync-{self.name}",
                                 daemon=True)
            self._threads.append(r)
            r.start()

    def _run_reflector(self, stop: threading.Event) -> None:
        try:
            self.reflector.run(stop)
        finally:
            self._shutdown_listeners()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the reflector and handler threads (sets the stop event if the informer owns none)."""
        if self._stop is not None:
            self._stop.set()
        self.reflector.interrupt()
        for t in self._threads:
            t.join(timeout)
        self._shutdown_listeners()

    def _shutdown_listeners(self) -> None:
        with self._lock:
            self._stopped = True
            listeners = list(self._listeners)
        for listener in listeners:
            listener.stop()
        for listener in listeners:
            listener.join(1.0)

    def is_stopped(self) -> bool:
        return self._stopped

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # -- sink (called from the reflector thread only) -------------------------------------------

    def _notify(self, kind: int, old: Any, new: Any, initial: bool = False) -> None:
        for listener in self._listeners:
            listener.add(kind, old, new, initial)

    def replace(self, items: list[Any], resource_version: str) -> None:
        with self._lock:
            store = self.store
            initial = not self._first_replace_done
            if initial and len(store) == 0:
                store.replace(items, resource_version)
                if self._listeners:
                    for obj in items:
                        self._notify(ADD, None, obj, True)
            else:
                new_keys = {meta_namespace_key(o): o for o in items}
                for key in store.list_keys():
                    if key not in new_keys:
                        old = store.delete(key)
                        self._notify(DELETE, DeletedFinalStateUnknown(key, old), None)
                for obj in new_keys.values():
                    old = store.add(obj)
                    if old is None:
                        self._notify(ADD, None, obj, initial)
                    elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                        self._notify(UPDATE, old, obj)
                store.resource_version = resource_version
            self._first_replace_done = True
        self._synced.set()

    def add(self, obj: Any) -> None:
        with self._lock:
            old = self.store.add(obj)
            self.store.resource_version = obj["metadata"].get("resourceVersion", "")
            if old is None:
                self._notify(ADD, None, obj)
            else:
                self._notify(UPDATE, old, obj)

    update = add

    def delete(self, obj: Any) -> None:
        with self._lock:
            self.store.delete(obj)
            self.store.resource_version = obj["metadata"].get("resourceVersion", "")
            self._notify(DELETE, obj, None)

    def bookmark(self, resource_version: str) -> None:
        self.store.resource_version = resource_version

    # -- resync --------------------------------------------------------------------------------

    def _resync_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self._resync_check):
            if not self._synced.is_set():
                continue
            now = time.monotonic()
            with self._lock:
                due = [lst for lst in self._listeners if lst.resync_period and lst.next_resync <= now]
                if not due:
                    continue
                objs = self.store.list()
                for lst in due:
                    lst.next_resync = now + lst.resync_period
                    for obj in objs:
                        lst.add(UPDATE, obj, obj)

    @property
    def resync_check_period(self) -> float:
        return self._resync_check


def _clamp_resync(period: float) -> float:
    if period <= 0:
        return 0.0
    return max(MIN_RESYNC, period)


def _decoded(obj: Any, transform: Transform | None, strip_managed_fields: bool) -> Any:
    if transform is not None and type(obj) is dict:
        obj = transform(obj)
    return freeze_decoded(obj, strip_managed_fields=strip_managed_fields)


Transform = Callable[[Any], Any]
