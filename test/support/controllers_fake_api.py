"""An in-memory stand-in for the client/reader pair a reconciler uses, for pure-logic unit tests.

Not an API server: no watches, no admission, no defaulting. It keeps resourceVersions so that stale
updates conflict, and applies merge patches (None deletes a key), which is all the policy sync needs.
"""

from __future__ import annotations

import copy
from typing import Any

from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import Kind


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.rv = 0
        self.writes: list[tuple[str, str, str]] = []

    def _key(self, kind: Kind, name: str, namespace: str | None) -> tuple[str, str, str]:
        return (kind.kind, (namespace or "") if kind.namespaced else "", name)

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("uid", f"uid-{self.rv}")
        return copy.deepcopy(obj)

    def add(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        self.objects[self._key(kind, obj["metadata"]["name"], obj["metadata"].get("namespace"))] = obj
        return self._bump(obj)

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return copy.deepcopy(self.objects[self._key(kind, name, namespace)])
        except KeyError:
            raise NotFound(404, f"{kind.kind} {namespace}/{name} not found") from None

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Any = None,
             field_selector: Any = None) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for (k, ns, _), o in sorted(self.objects.items())
                if k == kind.kind and (namespace is None or not kind.namespaced or ns == namespace)]

    def create(self, kind: Kind, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        key = self._key(kind, obj["metadata"]["name"], namespace or obj["metadata"].get("namespace"))
        if key in self.objects:
            raise Conflict(409, "already exists", {"reason": "AlreadyExists"})
        self.writes.append(("create", kind.kind, obj["metadata"]["name"]))
        return self.add(kind, obj)

    def update(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        key = self._key(kind, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        current = self.objects.get(key)
        if current is None:
            raise NotFound(404, "not found")
        if obj["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(409, "the object has been modified")
        new = copy.deepcopy(obj)
        if "status" in current:
            new["status"] = current["status"]  # status subresource: a PUT cannot change it
        self.objects[key] = new
        self.writes.append(("update", kind.kind, obj["metadata"]["name"]))
        return self._bump(new)

    def patch(self, kind: Kind, name: str, patch: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        key = self._key(kind, name, namespace)
        if key not in self.objects:
            raise NotFound(404, "not found")
        _merge(self.objects[key], patch)
        self.writes.append(("patch", kind.kind, name))
        return self._bump(self.objects[key])

    def delete(self, kind: Kind, name: str, namespace: str | None = None, **_: Any) -> None:
        if self.objects.pop(self._key(kind, name, namespace), None) is None:
            raise NotFound(404, "not found")
        self.writes.append(("delete", kind.kind, name))


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], type, reason, message))
