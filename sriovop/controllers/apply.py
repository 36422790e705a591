"""Create-or-merge-update of rendered objects (upstream's pkg/apply), without fighting the cluster.

A rendered object never carries what the cluster fills in (defaults, a Service's clusterIP, a
webhook's caBundle injected by cert-manager, a Deployment's revision annotation), so comparing it to
the live object naively would rewrite it on every reconcile. Two rules avoid that:
- an update happens only when the rendered object changed since it was last applied (a hash of it is
  kept in the annotation `APPLIED_HASH_ANNOTATION`; this also catches removed fields and map keys) or
  when the live object drifted from it (`is_subset`: every rendered field present with the same value;
  server defaults ignored);
- an update starts from the live object, takes the rendered spec, and keeps the cluster-managed fields.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from sriovop.runtime.createupdate import create_or_update
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import (
    MUTATING_WEBHOOK_CONFIGURATION,
    SERVICE,
    VALIDATING_WEBHOOK_CONFIGURATION,
    Kind,
)

log = structlog.get_logger(__name__)

Obj = dict[str, Any]

APPLIED_HASH_ANNOTATION = "sriovnetwork.openshift.io/applied-hash"
#: Top-level fields that are not part of an object's desired state.
_SKIP_TOP = ("apiVersion", "kind", "metadata", "status")
#: Annotations the cluster manages and an apply must not take away.
_CLUSTER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)


class ObjectClient(Protocol):
    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]: ...
    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Any: ...
    def update(self, kind: Kind, obj: Mapping[str, Any]) -> Any: ...
    def delete(self, kind: Kind, name: str, namespace: str | None = None) -> Any: ...


def is_subset(desired: Any, live: Any) -> bool:
    """Whether every field of `desired` is in `live` with the same value (lists: same length, each
    element a subset of its counterpart). As with apimachinery's semantic DeepDerivative, an empty
    value in `desired` (False, null, empty list/map) matches an absent field: the server omits them.
    Empty strings and 0 are compared (a label value "" is meaningful)."""
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        return all((is_subset(v, live[k]) if k in live else _is_zero(v)) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return False
        return all(is_subset(d, v) for d, v in zip(desired, live, strict=True))
    return bool(desired == live)


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == [] or value == {}


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def needs_update(desired: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    dmeta, lmeta = desired.get("metadata") or {}, live.get("metadata") or {}
    for key in ("labels", "annotations"):
        if not is_subset(dmeta.get(key) or {}, lmeta.get(key) or {}):
            return True
    if dmeta.get("ownerReferences") and not is_subset(dmeta["ownerReferences"], lmeta.get("ownerReferences") or []):
        return True
    return any(not is_subset(v, live.get(k)) for k, v in desired.items() if k not in _SKIP_TOP)


def merge_for_update(kind: Kind, desired: Mapping[str, Any], live: Mapping[str, Any]) -> Obj:
    """The object to PUT: live metadata (resourceVersion, uid, ...) with the rendered labels,
    annotations and ownerReferences, the rendered body, and the cluster-managed fields kept."""
    out: Obj = copy.deepcopy(dict(desired))
    meta = copy.deepcopy(dict(live["metadata"]))
    dmeta = desired.get("metadata") or {}
    meta["labels"] = {**(meta.get("labels") or {}), **(dmeta.get("labels") or {})}
    annotations = dict(dmeta.get("annotations") or {})
    for key in _CLUSTER_ANNOTATIONS:
        value = (live["metadata"].get("annotations") or {}).get(key)
        if value is not None:
            annotations.setdefault(key, value)
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    if dmeta.get("ownerReferences"):
        meta["ownerReferences"] = copy.deepcopy(dmeta["ownerReferences"])
    meta.pop("managedFields", None)
    out["metadata"] = meta
    if kind == SERVICE:
        spec = out.setdefault("spec", {})
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if key in (live.get("spec") or {}) and key not in spec:
                spec[key] = copy.deepcopy(live["spec"][key])
    if kind in (VALIDATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATION):
        live_hooks = {h.get("name"): h for h in live.get("webhooks") or []}
        for hook in out.get("webhooks") or []:
            ca = ((live_hooks.get(hook.get("name")) or {}).get("clientConfig") or {}).get("caBundle")
            if ca and not (hook.get("clientConfig") or {}).get("caBundle"):
                hook.setdefault("clientConfig", {})["caBundle"] = ca
    return out


def apply_object(client: ObjectClient, kind: Kind, desired: Mapping[str, Any],
                 owner: Mapping[str, Any] | None = None) -> str:
    """Create `desired`, or update the live object when it differs. Returns "created", "updated" or
    "unchanged". The owner reference is set only on namespaced objects (cluster-scoped objects cannot
    be owned by a namespaced one). A conflict (a stale read, or a create that raced another writer's)
    starts again from a new read (`create_or_update`)."""
    obj: Obj = copy.deepcopy(dict(desired))
    obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
    meta = obj.setdefault("metadata", {})
    if owner is not None and kind.namespaced:
        meta["ownerReferences"] = [owner_reference(owner)]
    digest = hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]
    meta.setdefault("annotations", {})[APPLIED_HASH_ANNOTATION] = digest
    name, namespace = meta["name"], meta.get("namespace")

    def mutate(live: Obj) -> None:
        if needs_update(obj, live):
            merged = merge_for_update(kind, obj, live)
            live.clear()
            live.update(merged)

    # The skeleton of a missing object needs everything: it is created as rendered.
    operation, _ = create_or_update(client, kind, name, namespace, mutate, reader=client)
    if operation != "unchanged":
        log.info(f"object {operation}", kind=kind.kind, name=name, namespace=namespace)
    return operation


def delete_object(client: ObjectClient, kind: Kind, name: str, namespace: str | None = None) -> bool:
    """Delete if present; True when something was deleted."""
    try:
        client.delete(kind, name, namespace)
    except NotFound:
        return False
    log.info("object deleted", kind=kind.kind, name=name, namespace=namespace)
    return True
