"""Writing a `Ready` condition the way upstream's status patcher does, and announcing transitions.

Server-side apply on the status subresource with the operator's field manager, so the condition list
(a list-map keyed by `type`) is merged, not clobbered, and other writers' conditions survive.
lastTransitionTime moves only when the status flips (metav1.Condition semantics); an unchanged
condition is not written at all, so a steady-state reconcile costs no write. An Event goes out whenever
status or reason changes, which is what a user watching `kubectl get events` wants to see.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from sriovop.api.v1 import consts
from sriovop.runtime.kinds import Kind

log = structlog.get_logger(__name__)


class Recorder(Protocol):
    """sriovop.runtime.events.EventRecorder, or anything with the same `event`."""

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


class StatusWriter(Protocol):
    def patch(self, kind: Kind, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: Any = "merge", field_manager: str | None = None, subresource: str | None = None,
              force: bool | None = None) -> Any: ...


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def set_ready(writer: StatusWriter, recorder: Recorder | None, kind: Kind, obj: Mapping[str, Any],
              ready: bool, reason: str, message: str) -> bool:
    """Make `obj`'s Ready condition say (ready, reason, message). Returns True when it was written."""
    meta = obj["metadata"]
    status = "True" if ready else "False"
    generation = meta.get("generation")
    old = find_condition(obj, consts.CONDITION_READY)
    if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message) \
            and old.get("observedGeneration") == generation:
        return False
    transition = old is None or old.get("status") != status
    cond: dict[str, Any] = {
        "type": consts.CONDITION_READY,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now_rfc3339() if transition or old is None else old.get("lastTransitionTime"),
    }
    if generation is not None:
        cond["observedGeneration"] = generation
    body = {
        "apiVersion": kind.api_version, "kind": kind.kind,
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace")},
        "status": {"conditions": [cond]},
    }
    writer.patch(kind, meta["name"], body, meta.get("namespace"), patch_type="apply",
                 field_manager=consts.FIELD_MANAGER, subresource="status", force=True)
    if recorder is not None and (old is None or transition or old.get("reason") != reason):
        try:
            recorder.event(obj, "Normal" if ready else "Warning", reason, message)
        except (ValueError, TypeError) as exc:  # an object we cannot point an Event at; never fail the reconcile
            log.warning("event not recorded", error=str(exc), name=meta["name"])
    return True
