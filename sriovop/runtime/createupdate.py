"""`create_or_update`: controller-runtime's `controllerutil.CreateOrUpdate`.

Read the object, let `mutate` set what the caller owns on it (a fresh skeleton when it does not exist),
then create it, update it when `mutate` changed it, or leave it alone. Every attempt runs under
`retry_on_conflict`: a create that finds the object already there, or an update from a stale read,
starts again from a read of the API server, so a caller never overwrites a change it has not seen.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import Kind
from sriovop.runtime.objects import thaw
from sriovop.runtime.retry import retry_on_conflict

Operation = Literal["created", "updated", "unchanged"]
Mutate = Callable[[dict[str, Any]], None]


class Reader(Protocol):
    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]: ...


class Writer(Protocol):
    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Any: ...
    def update(self, kind: Kind, obj: Mapping[str, Any]) -> Any: ...


def create_or_update(client: Writer, kind: Kind, name: str, namespace: str | None, mutate: Mutate, *,
                     reader: Reader, fresh_reader: Reader | None = None,
                     attempts: int = 5) -> tuple[Operation, Mapping[str, Any]]:
    """Returns what was done and the object as written (or as read when unchanged).

    `reader` serves the first attempt (an informer cache is fine); retries read from `fresh_reader`
    (default: `reader`), which should be the API server.
    """
    def attempt(n: int) -> tuple[Operation, Mapping[str, Any]]:
        source = reader if n == 0 or fresh_reader is None else fresh_reader
        try:
            live: dict[str, Any] | None = thaw(source.get(kind, name, namespace))
        except NotFound:
            live = None
        if live is None:
            obj: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind,
                                   "metadata": {"name": name, **({"namespace": namespace} if namespace else {})}}
            mutate(obj)
            _check_identity(obj, kind, name, namespace)
            return "created", client.create(kind, obj, namespace)
        before = copy.deepcopy(live)
        mutate(live)
        _check_identity(live, kind, name, namespace)
        if live == before:
            return "unchanged", before
        return "updated", client.update(kind, live)

    return retry_on_conflict(attempt, attempts=attempts)


def _check_identity(obj: Mapping[str, Any], kind: Kind, name: str, namespace: str | None) -> None:
    meta = obj.get("metadata") or {}
    if meta.get("name") != name or (kind.namespaced and meta.get("namespace") != namespace):
        raise ValueError(f"create_or_update of {kind.kind} {namespace}/{name}: mutate changed the object's "
                         f"name or namespace to {meta.get('namespace')}/{meta.get('name')}")
