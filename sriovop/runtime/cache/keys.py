"""Cache keys (`namespace/name`, or `name` for cluster-scoped objects) and delete tombstones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A delete learned from a relist rather than a watch event: `obj` is the last state we knew and
    may be stale. Delete handlers receive either an object or one of these."""

    key: str
    obj: Any


def meta_namespace_key(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """`ns/name` → (ns, name); `name` → ("", name); anything else is an error."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def object_of(obj_or_tombstone: Any) -> Any:
    """The object inside a tombstone, or the object itself: delete handlers usually want this."""
    if isinstance(obj_or_tombstone, DeletedFinalStateUnknown):
        return obj_or_tombstone.obj
    return obj_or_tombstone


def resource_version(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")
