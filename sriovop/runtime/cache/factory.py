"""One shared informer per (kind, namespace, selectors), so handlers share a single watch."""

from __future__ import annotations

import threading
import time

from sriovop.runtime.cache.informer import SharedIndexInformer
from sriovop.runtime.client import Client, Selector, selector_string
from sriovop.runtime.kinds import Kind

InformerKey = tuple[Kind, str, str, str]


class InformerFactory:
    """```
    f = InformerFactory(client)
    inf = f.informer_for(CONFIG_MAP, namespace="ns")   # same object on every call with these args
    f.start(stop); f.wait_for_cache_sync(timeout=60)
    ```
    Informers requested after `start` are started at once.
    """

    def __init__(self, client: Client, *, resync_period: float = 0.0, read_timeout: float | None = None,
                 strip_managed_fields: bool = True) -> None:
        self.client = client
        self.resync_period = resync_period
        self.read_timeout = read_timeout
        self.strip_managed_fields = strip_managed_fields
        self._lock = threading.Lock()
        self._informers: dict[InformerKey, SharedIndexInformer] = {}
        self._stop: threading.Event | None = None

    def informer_for(self, kind: Kind, namespace: str | None = None, *, label_selector: Selector = None,
                     field_selector: Selector = None) -> SharedIndexInformer:
        ns = (namespace or "") if kind.namespaced else ""
        key = (kind, ns, selector_string(label_selector) or "", selector_string(field_selector) or "")
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                inf = SharedIndexInformer(
                    self.client, kind, namespace=ns or None, label_selector=label_selector,
                    field_selector=field_selector, resync_period=self.resync_period,
                    read_timeout=self.read_timeout, strip_managed_fields=self.strip_managed_fields,
                )
                self._informers[key] = inf
                if self._stop is not None:
                    inf.start(self._stop)
            return inf

    def informers(self) -> list[SharedIndexInformer]:
        with self._lock:
            return list(self._informers.values())

    def start(self, stop: threading.Event) -> None:
        with self._lock:
            self._stop = stop
            informers = list(self._informers.values())
        for inf in informers:
            inf.start(stop)

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for inf in self.informers():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not inf.wait_for_cache_sync(remaining, self._stop):
                return False
        return True

    def has_synced(self) -> bool:
        return all(inf.has_synced() for inf in self.informers())

    def shutdown(self, timeout: float = 5.0) -> None:
        if self._stop is not None:
            self._stop.set()
        for inf in self.informers():
            inf.stop(timeout)
