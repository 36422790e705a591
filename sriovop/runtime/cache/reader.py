"""The informer-backed reader a manager hands to controllers (controller-runtime's cache).

Scope: all namespaces, or a set of namespaces (one informer per namespace per kind; cluster-scoped
kinds always get one cluster-wide informer). Informers are created on first use; a read of a kind
whose informer has not synced yet blocks until it has (up to `sync_timeout`).

`index_field(kind, "spec.networkNamespace", extractor)` registers an index so that
`list(kind, field_selector={"spec.networkNamespace": "ns"})` is answered from it; `metadata.name`
and `metadata.namespace` work without an index. Objects returned are shared and read-only (frozen);
use `sriovop.runtime.objects.thaw` for a mutable copy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sriovop.runtime.cache.informer import SharedIndexInformer, Transform
from sriovop.runtime.cache.selectors import field_value, parse_field_selector, parse_label_selector
from sriovop.runtime.cache.store import IndexFunc
from sriovop.runtime.client import Client, Selector
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import Kind

ALL_NAMESPACES_KEY = "__all_namespaces"
Extractor = Callable[[Any], "str | Iterable[str] | None"]


class CacheError(Exception):
    """A read the cache cannot answer (namespace outside its scope, unindexed field, not synced)."""


def field_index_name(field: str) -> str:
    return "field:" + field


def _field_index_func(extractor: Extractor) -> IndexFunc:
    def index(obj: Any) -> list[str]:
        raw = extractor(obj)
        if raw is None:
            return []
        values = [raw] if isinstance(raw, str) else list(raw)
        ns = obj["metadata"].get("namespace")
        out = []
        for v in values:
            out.append(f"{ALL_NAMESPACES_KEY}/{v}")
            if ns:
                out.append(f"{ns}/{v}")
        return out
    return index


class Cache:
    def __init__(
        self, client: Client, *, namespaces: Iterable[str] | None = None, resync_period: float = 0.0,
        read_timeout: float | None = None, strip_managed_fields: bool = True, sync_timeout: float = 120.0,
        compact_kinds: Iterable[Kind] = (), transforms: Mapping[Kind, Transform] | None = None,
    ) -> None:
        """`transforms`: per kind, the informer transform (SharedIndexInformer's `transform`)."""
        self.client = client
        self.namespaces: frozenset[str] | None = frozenset(namespaces) if namespaces is not None else None
        self.resync_period = resync_period
        self.read_timeout = read_timeout
        self.strip_managed_fields = strip_managed_fields
        self.sync_timeout = sync_timeout
        self.compact_kinds = frozenset(compact_kinds)
        self.transforms = dict(transforms or {})
        self._lock = threading.Lock()
        self._informers: dict[Kind, dict[str, SharedIndexInformer]] = {}
        self._field_indexes: dict[Kind, dict[str, IndexFunc]] = {}
        self._stop: threading.Event | None = None

    # -- informers -----------------------------------------------------------------------------

    def _scopes(self, kind: Kind) -> list[str]:
        if not kind.namespaced or self.namespaces is None:
            return [""]
        return sorted(self.namespaces)

    def informers_for(self, kind: Kind) -> list[SharedIndexInformer]:
        """The informers covering `kind` in this cache's scope, created (and started) on first use."""
        with self._lock:
            by_ns = self._informers.get(kind)
            if by_ns is None:
                by_ns = {}
                for ns in self._scopes(kind):
                    inf = SharedIndexInformer(
                        self.client, kind, namespace=ns or None, resync_period=self.resync_period,
                        read_timeout=self.read_timeout, strip_managed_fields=self.strip_managed_fields,
                        indexers=self._field_indexes.get(kind), compact=kind in self.compact_kinds,
                        transform=self.transforms.get(kind),
                    )
                    by_ns[ns] = inf
                    if self._stop is not None:
                        inf.start(self._stop)
                self._informers[kind] = by_ns
            return list(by_ns.values())

    def index_field(self, kind: Kind, field: str, extractor: Extractor) -> None:
        """Index `kind` by `field` (values from `extractor(obj)`: a string, strings, or None)."""
        name = field_index_name(field)
        fn = _field_index_func(extractor)
        with self._lock:
            existing = self._field_indexes.setdefault(kind, {})
            if name in existing:
                raise ValueError(f"indexer conflict: field {field!r} of {kind} is already indexed")
            existing[name] = fn
            informers = list(self._informers.get(kind, {}).values())
        for inf in informers:
            inf.add_indexers({name: fn})

    def start(self, stop: threading.Event) -> None:
        with self._lock:
            self._stop = stop
            informers = [i for by_ns in self._informers.values() for i in by_ns.values()]
        for inf in informers:
            inf.start(stop)

    def all_informers(self) -> list[SharedIndexInformer]:
        with self._lock:
            return [i for by_ns in self._informers.values() for i in by_ns.values()]

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for inf in self.all_informers():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not inf.wait_for_cache_sync(remaining, self._stop):
                return False
        return True

    def has_synced(self) -> bool:
        return all(inf.has_synced() for inf in self.all_informers())

    def stop(self, timeout: float = 5.0) -> None:
        if self._stop is not None:
            self._stop.set()
        for inf in self.all_informers():
            inf.stop(timeout)

    def _synced_informers(self, kind: Kind, namespace: str | None) -> list[SharedIndexInformer]:
        if self._stop is None:
            raise CacheError("the cache has not been started")
        infs = self.informers_for(kind)
        if kind.namespaced and namespace and self.namespaces is not None:
            if namespace not in self.namespaces:
                raise CacheError(
                    f"namespace {namespace!r} is outside this cache's scope {sorted(self.namespaces)}; "
                    "use an uncached reader or widen the manager's namespaces")
            infs = [i for i in infs if i.namespace == namespace]
        for inf in infs:
            if not inf.wait_for_cache_sync(self.sync_timeout, self._stop):
                raise CacheError(f"informer {inf.name} did not sync within {self.sync_timeout}s")
        return infs

    # -- Reader --------------------------------------------------------------------------------

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]:
        ns = namespace if kind.namespaced else None
        if kind.namespaced and not ns:
            raise ValueError(f"{kind.kind} is namespaced: a namespace is needed to get {name!r}")
        key = f"{ns}/{name}" if ns else name
        for inf in self._synced_informers(kind, ns):
            obj = inf.store.get_by_key(key)
            if obj is not None:
                return obj
        raise NotFound(404, f"{kind.plural} {name!r} not found in cache"
                            + (f" (namespace {ns})" if ns else ""),
                       {"kind": "Status", "reason": "NotFound", "code": 404})

    def list(
        self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
        field_selector: Selector = None,
    ) -> list[Any]:
        ns = namespace if kind.namespaced else None
        infs = self._synced_informers(kind, ns)
        reqs = parse_field_selector(field_selector)
        indexed = [(f, v) for f, v, eq in reqs if eq and f not in ("metadata.name", "metadata.namespace")]
        items: list[Any] = []
        if indexed:
            field, value = indexed[0]
            index_name = field_index_name(field)
            key = f"{ns}/{value}" if ns else f"{ALL_NAMESPACES_KEY}/{value}"
            for inf in infs:
                try:
                    items.extend(inf.store.by_index(index_name, key))
                except KeyError:
                    raise CacheError(
                        f"cannot list {kind.plural} by field {field!r}: no index; register one with "
                        f"manager.index_field({kind.kind}, {field!r}, extractor)") from None
            rest = [r for r in reqs if (r[0], r[1]) != (field, value) or not r[2]]
        else:
            for inf in infs:
                if ns:
                    items.extend(inf.store.by_index("namespace", ns))
                else:
                    items.extend(inf.store.list())
            rest = reqs
        for f, v, eq in rest:
            if f not in ("metadata.name", "metadata.namespace") and eq:
                # several indexed requirements: filter by the extracted values of the others
                fn = self._field_indexes.get(kind, {}).get(field_index_name(f))
                if fn is None:
                    raise CacheError(f"cannot list {kind.plural} by field {f!r}: no index")
                want = f"{ALL_NAMESPACES_KEY}/{v}"
                items = [o for o in items if want in fn(o)]
            else:
                items = [o for o in items if (field_value(o, f) == v) == eq]
        if label_selector:
            match = parse_label_selector(label_selector)
            items = [o for o in items if match(o["metadata"].get("labels") or {})]
        return items
