"""The selected nodes that a policy has to be judged on: one per class of nodes the rules cannot tell apart.

Every dynamic check reads a node through a few facts only: its interfaces as `cached_shape` keys them,
whether it runs on a virtual platform, and its values for the label keys that stored policies select
on (which peers select it). Nodes equal in all three are judged alike by every rule, for any policy,
except for the node name in a denial. A fleet of identical servers is a few classes, so a request
judges a handful of nodes instead of every selected one: in the first node of each class, in the
selection's order, which is the node the per-node walk would name in the same denial (every earlier
node belongs to a class already judged without a denial).

The classes of a selection are kept while the view's version (its Node, NodeState and policy caches)
and the selection itself (the same tuple from the selection memo) do not change; a new version drops
them all, so the memo never holds a selection the caches have moved past. Only the outcome
"something is selected" is decided from the classes; when nothing is, the caller walks every node to
list them in the denial.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

Obj = dict[str, Any]
#: Selections whose classes are kept per version; beyond it classes are computed and not kept.
MAX_SELECTIONS = 256


def first_of_each_class(nodes: Sequence[Obj], class_of: Callable[[Obj], Hashable]) -> tuple[Obj, ...]:
    """The first node of each class, in the order of `nodes`."""
    seen: set[Hashable] = set()
    out: list[Obj] = []
    for node in nodes:
        key = class_of(node)
        if key not in seen:
            seen.add(key)
            out.append(node)
    return tuple(out)


class NodeClassMemo:
    """Representatives per selection (by identity) at one view version at a time."""

    def __init__(self, max_selections: int = MAX_SELECTIONS) -> None:
        self._lock = threading.Lock()
        self._version: Hashable = None
        self._kept: dict[int, tuple[Sequence[Obj], tuple[Obj, ...]]] = {}
        self._max = max_selections

    def representatives(self, nodes: Sequence[Obj], version: Hashable,
                        class_of: Callable[[Obj], Hashable]) -> tuple[Obj, ...]:
        """`first_of_each_class(nodes, class_of)`, from memory for the same `nodes` object at the same
        `version`. The caller reads `version` before its caches are read, so a kept answer is at least as
        new as its key."""
        with self._lock:
            if version != self._version:
                self._version, self._kept = version, {}
            hit = self._kept.get(id(nodes))
        if hit is not None and hit[0] is nodes:
            return hit[1]
        found = first_of_each_class(nodes, class_of)
        with self._lock:
            if version == self._version and len(self._kept) < self._max:
                self._kept[id(nodes)] = (nodes, found)
        return found
