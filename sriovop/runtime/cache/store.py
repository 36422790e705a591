"""A thread-safe keyed store with named indexes (client-go's ThreadSafeStore + Indexer).

Index functions map an object to a list of string values; the store keeps name → value → keys and
drops a value's key set when it empties, so high-cardinality indexes do not leak (kubernetes#84959).
Objects are stored as given (frozen by the reflector), so reads hand out shared references cheaply.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sriovop.runtime.cache.keys import meta_namespace_key

IndexFunc = Callable[[Any], list[str]]
_NO_KEYS: frozenset[str] = frozenset()
NAMESPACE_INDEX = "namespace"


def namespace_index(obj: Any) -> list[str]:
    return [str(obj["metadata"].get("namespace") or "")]


class Store:
    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None,
                 key_func: Callable[[Any], str] = meta_namespace_key) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self._key_func = key_func
        self.resource_version = ""

    # -- writes --------------------------------------------------------------------------------

    def add(self, obj: Any) -> Any:
        """Upsert; returns the previous object for the key (None if new)."""
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            if self._indexers:
                self._update_indices(old, obj, key)
            return old

    update = add

    def delete(self, obj_or_key: Any) -> Any:
        key = self._key_func(obj_or_key)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None and self._indexers:
                self._update_indices(old, None, key)
            return old

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        latest = {self._key_func(o): o for o in items}
        with self._lock:
            self._items = {key: self._pack(obj) for key, obj in latest.items()}
            self._indices = {name: {} for name in self._indexers}
            for key, obj in latest.items():
                self._update_indices(None, obj, key)
            if resource_version:
                self.resource_version = resource_version

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register more indexes; existing items are indexed at once. A taken name is a conflict."""
        with self._lock:
            clash = set(indexers) & set(self._indexers)
            if clash:
                raise ValueError(f"indexer conflict: {sorted(clash)}")
            for name, fn in indexers.items():
                self._indexers[name] = fn
                index: dict[str, set[str]] = {}
                self._indices[name] = index
                for key, stored in self._items.items():
                    for value in fn(self._unpack(stored)):
                        index.setdefault(value, set()).add(key)

    # How items are kept: as given here; a subclass may keep another representation (see compact.py).
    # Only replace() and add_indexers() go through these hooks; the hot paths are written out per class.
    @staticmethod
    def _pack(obj: Any) -> Any:
        return obj

    @staticmethod
    def _unpack(stored: Any) -> Any:
        return stored

    def _update_indices(self, old: Any, new: Any, key: str) -> None:
        for name, fn in self._indexers.items():
            old_values = fn(old) if old is not None else []
            new_values = fn(new) if new is not None else []
            if len(old_values) == 1 and len(new_values) == 1 and old_values[0] == new_values[0]:
                continue
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)

    # -- reads ---------------------------------------------------------------------------------

    def get_by_key(self, key: str) -> Any:
        return self._items.get(key)

    def get(self, obj: Any) -> Any:
        return self._items.get(self._key_func(obj))

    def list(self) -> builtins.list[Any]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def _index(self, name: str) -> dict[str, set[str]]:
        try:
            return self._indices[name]
        except KeyError:
            raise KeyError(f"Index with name {name} does not exist") from None

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        with self._lock:
            return sorted(self._index(name).get(value, ()))

    def by_index(self, name: str, value: str) -> builtins.list[Any]:
        with self._lock:
            items = self._items
            return [items[k] for k in self._index(name).get(value, ())]

    def by_indices(self, name: str, values: Iterable[str]) -> builtins.list[Any]:
        """Objects indexed under every one of `values` (all objects when there are none): the buckets'
        intersection, smallest first, so a rare value bounds the work however large the others are."""
        with self._lock:
            items = self._items
            return [items[k] for k in self._keys_in_all(name, values)]

    def _keys_in_all(self, name: str, values: Iterable[str]) -> Iterable[str]:
        """Under the lock: the keys indexed under every one of `values`."""
        index = self._index(name)
        buckets = sorted((index.get(v, _NO_KEYS) for v in values), key=len)
        if not buckets:
            return self._items.keys()
        return buckets[0].intersection(*buckets[1:])

    def index(self, name: str, obj: Any) -> builtins.list[Any]:
        """Objects sharing at least one index value with `obj`."""
        with self._lock:
            index = self._index(name)
            keys: set[str] = set()
            for value in self._indexers[name](obj):
                keys |= index.get(value, set())
            return [self._items[k] for k in keys]

    def list_index_func_values(self, name: str) -> builtins.list[str]:
        with self._lock:
            return list(self._index(name))

    def indexer_names(self) -> builtins.list[str]:
        with self._lock:
            return list(self._indexers)
