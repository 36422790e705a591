"""A bounded memo keyed by object identity, for objects of the informer cache only.

A cache hands out the same FrozenDict until the object changes (it is replaced, never mutated), so an
identity check makes a hit safe. A live view's fresh plain dicts are never kept (they would only pin
memory). The admission checks derive several facts per cached Node, NodeState and policy (parsed
peers, name aliases, interface shapes, node facts); each keeps one of these.
"""

from __future__ import annotations

from collections.abc import Callable, ValuesView
from typing import Generic, TypeVar

from sriovop.runtime.objects import FrozenDict

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """id(object) -> (object, value), cleared whole when `limit` entries are reached."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: dict[int, tuple[object, V]] = {}

    def get(self, obj: object, compute: Callable[[], V]) -> V:
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = compute()
        if type(obj) is FrozenDict:
            if len(self._entries) >= self.limit:
                self._entries.clear()
            self._entries[id(obj)] = (obj, value)
        return value

    def values(self) -> ValuesView[tuple[object, V]]:
        """The kept (object, value) entries: what the tests inspect to show only frozen objects are kept."""
        return self._entries.values()
