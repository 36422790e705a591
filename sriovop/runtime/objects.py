"""Read-only JSON objects for the cache.

Cached objects are shared by every reader and handler, so a caller that changes one in place corrupts
the cache for everybody (and its indexes silently go stale). client-go relies on a contract;
controller-runtime deep-copies on every read. We do neither: objects are frozen once when decoded, so
reads are free and an in-place change raises at once. `FrozenDict`/`FrozenList` subclass dict/list, so
`json.dumps`, `isinstance(x, dict)`, `==` and every read method keep working.

To change a cached object, take a mutable deep copy first: `thaw(obj)` (or `copy.deepcopy(obj)`,
which does the same).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, NoReturn


def _readonly(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} is read-only: it is shared by the informer cache; "
        "copy it with sriovop.runtime.objects.thaw(obj) (or copy.deepcopy) before changing it"
    )


class FrozenDict(dict[str, Any]):
    """A dict whose mutators raise; `_unsafe_set` exists for the decoder that builds it."""

    __slots__ = ()
    __setitem__ = _readonly
    __delitem__ = _readonly
    __ior__ = _readonly
    clear = _readonly
    pop = _readonly
    popitem = _readonly
    setdefault = _readonly
    update = _readonly

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_frozen_from_dict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        raise TypeError("unhashable type: 'FrozenDict'")


def _frozen_from_dict(d: dict[str, Any]) -> FrozenDict:
    return FrozenDict(d)


class FrozenList(list[Any]):
    __slots__ = ()
    __setitem__ = _readonly
    __delitem__ = _readonly
    __iadd__ = _readonly
    __imul__ = _readonly
    append = _readonly
    clear = _readonly
    extend = _readonly
    insert = _readonly
    pop = _readonly
    remove = _readonly
    reverse = _readonly
    sort = _readonly

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


_dict_set = dict.__setitem__
_intern = sys.intern


def _freeze_lists(d: dict[str, Any]) -> FrozenDict:
    """object_pairs_hook-free decoding: dicts come in as plain dicts; lists below them are swapped."""
    for k, v in d.items():
        if type(v) is list:
            _dict_set(d, k, _freeze_list(v))
    return FrozenDict(d)


def _freeze_list(lst: list[Any]) -> FrozenList:
    for i, v in enumerate(lst):
        if type(v) is list:
            list.__setitem__(lst, i, _freeze_list(v))
    return FrozenList(lst)


def loads_frozen(data: bytes | str) -> Any:
    """Decode JSON into FrozenDict/FrozenList; nested dicts are frozen by the decoder's hook."""
    v = json.loads(data, object_hook=_freeze_lists)
    if type(v) is list:
        return _freeze_list(v)
    return v


def _freeze_stripped(d: dict[str, Any]) -> FrozenDict:
    if "managedFields" in d and "resourceVersion" in d:
        del d["managedFields"]
    for k, v in d.items():
        if type(v) is list:
            _dict_set(d, k, _freeze_list(v))
    return FrozenDict(d)


def loads_frozen_stripped(data: bytes | str) -> Any:
    """loads_frozen without metadata.managedFields: the SSA bookkeeping is often half an object's
    size and controllers never read it (controller-runtime's recommended DefaultTransform)."""
    v = json.loads(data, object_hook=_freeze_stripped)
    if type(v) is list:
        return _freeze_list(v)
    return v


#: String values up to this length are interned when frozen. Cached objects repeat most short values
#: (vendor and device IDs, drivers, link types and speeds, PF names and PCI addresses of identical
#: servers, label values, timestamps of objects created together), and each copy costs a str object
#: (49 bytes + its length). Sharing them took 5,000 trimmed NodeStates from 31.7 to 20.1 MiB; longer
#: values (uids, MACs, messages) are mostly unique, and interning them would only add a table entry.
#: Interned strings are mortal: one goes when the last object holding it is dropped.
SHARED_VALUE_MAX_LEN = 24


def _freeze_plain_dict(d: dict[str, Any]) -> FrozenDict:
    for k, v in d.items():
        t = type(v)
        if t is str:
            if len(v) <= SHARED_VALUE_MAX_LEN:
                _dict_set(d, k, _intern(v))
        elif t is dict:
            _dict_set(d, k, _freeze_plain_dict(v))
        elif t is list:
            _dict_set(d, k, _freeze_plain_list(v))
    # keys are interned: objects decoded one by one (watch events, streamed lists) would otherwise
    # each carry their own copy of every field name
    return FrozenDict(zip(map(_intern, d), d.values(), strict=True))


def _freeze_plain_list(lst: list[Any]) -> FrozenList:
    for i, v in enumerate(lst):
        t = type(v)
        if t is str:
            if len(v) <= SHARED_VALUE_MAX_LEN:
                list.__setitem__(lst, i, _intern(v))
        elif t is dict:
            list.__setitem__(lst, i, _freeze_plain_dict(v))
        elif t is list:
            list.__setitem__(lst, i, _freeze_plain_list(v))
    return FrozenList(lst)


def freeze_plain(value: Any) -> Any:
    """Freeze freshly decoded JSON in place (a dict, a list or a scalar) as `freeze_decoded` does,
    short strings interned."""
    t = type(value)
    if t is dict:
        return _freeze_plain_dict(value)
    if t is list:
        return _freeze_plain_list(value)
    if t is str and len(value) <= SHARED_VALUE_MAX_LEN:
        return _intern(value)
    return value


def freeze_decoded(obj: dict[str, Any], strip_managed_fields: bool = False) -> FrozenDict:
    """Freeze a freshly decoded object in place (it must not be shared yet), optionally without
    metadata.managedFields. Cheaper than a decoder hook because stripped parts are never visited."""
    if strip_managed_fields:
        meta = obj.get("metadata")
        if type(meta) is dict and "managedFields" in meta:
            del meta["managedFields"]
    return _freeze_plain_dict(obj)


def freeze(obj: Any) -> Any:
    """A frozen deep copy of plain JSON data (already-frozen parts are shared, not copied)."""
    t = type(obj)
    if t is FrozenDict or t is FrozenList:
        return obj
    if isinstance(obj, Mapping):
        return FrozenDict({k: freeze(v) for k, v in obj.items()})
    if isinstance(obj, list | tuple):
        return FrozenList([freeze(v) for v in obj])
    return obj


def thaw(obj: Any) -> Any:
    """A mutable deep copy made of plain dicts and lists, safe to change and send back."""
    if isinstance(obj, dict):
        return {k: thaw(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [thaw(v) for v in obj]
    return obj
