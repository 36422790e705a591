"""`retry_on_conflict` and `create_or_update` (client-go's RetryOnConflict, controller-runtime's
CreateOrUpdate): a lost race is retried from a fresh read, nothing else is retried.

Host: none (an in-memory object server that raises the API server's 409s).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from sriovop.runtime.createupdate import create_or_update
from sriovop.runtime.errors import Conflict, Invalid, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, Kind
from sriovop.runtime.retry import retry_on_conflict


def _conflict(reason: str = "Conflict") -> Conflict:
    return Conflict(409, "the object has been modified", {"kind": "Status", "reason": reason, "code": 409})


class Server:
    """Objects by name with resourceVersions; updates from a stale version are refused."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes: list[str] = []
        self.before_write: list[Any] = []  # callables run before the next write (a racing writer)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]:
        if name not in self.objects:
            raise NotFound(404, f"{name} not found", {"kind": "Status", "reason": "NotFound", "code": 404})
        return copy.deepcopy(self.objects[name])

    def _race(self) -> None:
        while self.before_write:
            self.before_write.pop(0)()

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Any:
        self._race()
        name = obj["metadata"]["name"]
        if name in self.objects:
            raise _conflict("AlreadyExists")
        stored = copy.deepcopy(dict(obj))
        stored["metadata"]["resourceVersion"] = "1"
        self.objects[name] = stored
        self.writes.append("create")
        return copy.deepcopy(stored)

    def update(self, kind: Kind, obj: Mapping[str, Any]) -> Any:
        self._race()
        name = obj["metadata"]["name"]
        live = self.objects[name]
        if obj["metadata"].get("resourceVersion") != live["metadata"]["resourceVersion"]:
            raise _conflict()
        stored = copy.deepcopy(dict(obj))
        stored["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)
        self.objects[name] = stored
        self.writes.append("update")
        return copy.deepcopy(stored)

    def someone_sets(self, key: str, value: str) -> None:
        live = self.objects["cm"]
        live.setdefault("data", {})[key] = value
        live["metadata"]["resourceVersion"] = str(int(live["metadata"]["resourceVersion"]) + 1)


def _set(key: str, value: str) -> Any:
    def mutate(obj: dict[str, Any]) -> None:
        obj.setdefault("data", {})[key] = value
    return mutate


def test_create_then_unchanged_then_updated() -> None:
    server = Server()
    op, obj = create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "1"), reader=server)
    assert (op, obj["data"], obj["metadata"]["namespace"]) == ("created", {"a": "1"}, "ns")
    assert create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "1"), reader=server)[0] == "unchanged"
    assert create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "2"), reader=server)[0] == "updated"
    assert server.writes == ["create", "update"]


def test_a_stale_update_is_redone_from_a_fresh_read_keeping_the_other_writer_s_change() -> None:
    server = Server()
    create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "1"), reader=server)
    server.before_write.append(lambda: server.someone_sets("b", "theirs"))
    op, obj = create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "2"), reader=server)
    assert op == "updated" and obj["data"] == {"a": "2", "b": "theirs"}


def test_a_create_that_lost_the_race_becomes_an_update() -> None:
    server = Server()
    server.before_write.append(lambda: server.objects.update(
        cm={"metadata": {"name": "cm", "namespace": "ns", "resourceVersion": "7"}, "data": {"b": "theirs"}}))
    op, obj = create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "1"), reader=server)
    assert op == "updated" and obj["data"] == {"a": "1", "b": "theirs"}


def test_retries_read_from_the_fresh_reader() -> None:
    server, stale = Server(), Server()
    create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "1"), reader=server)
    stale.objects = copy.deepcopy(server.objects)
    server.someone_sets("b", "theirs")  # the cache (stale) has not seen this yet
    op, obj = create_or_update(server, CONFIG_MAP, "cm", "ns", _set("a", "2"), reader=stale, fresh_reader=server)
    assert op == "updated" and obj["data"] == {"a": "2", "b": "theirs"}


def test_mutate_may_not_rename() -> None:
    def rename(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "other"
    with pytest.raises(ValueError, match="changed the object's name"):
        create_or_update(Server(), CONFIG_MAP, "cm", "ns", rename, reader=Server())


def test_retry_on_conflict_gives_up_after_the_attempts_and_retries_nothing_else() -> None:
    calls: list[int] = []

    def always_conflict(attempt: int) -> None:
        calls.append(attempt)
        raise _conflict()
    with pytest.raises(Conflict):
        retry_on_conflict(always_conflict, attempts=3)
    assert calls == [0, 1, 2]

    def invalid(attempt: int) -> None:
        calls.append(attempt)
        raise Invalid(422, "spec.numVfs: must be >= 0", {"kind": "Status", "reason": "Invalid", "code": 422})
    calls.clear()
    with pytest.raises(Invalid):
        retry_on_conflict(invalid)
    assert calls == [0]
