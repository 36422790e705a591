"""Writing conditions (`Ready` and its companions) the way upstream's status patcher does, and announcing
transitions.

Server-side apply on the status subresource with the operator's field manager, so the condition list
(a list-map keyed by `type`) is merged, not clobbered, and other writers' conditions survive.
lastTransitionTime moves only when the status flips (metav1.Condition semantics); an unchanged
condition is not written at all, so a steady-state reconcile costs no write. An Event goes out whenever
status or reason changes, which is what a user watching `kubectl get events` wants to see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class ConditionSpec:
    """One condition as a reconciler wants it: `status` is "True" or "False"."""

    type: str
    status: str
    reason: str
    message: str


def set_ready(writer: StatusWriter, recorder: Recorder | None, kind: Kind, obj: Mapping[str, Any],
              ready: bool, reason: str, message: str) -> bool:
    """Make `obj`'s Ready condition say (ready, reason, message). Returns True when it was written."""
    cond = ConditionSpec(consts.CONDITION_READY, "True" if ready else "False", reason, message)
    return set_conditions(writer, recorder, kind, obj, [cond])


def _unchanged(old: Mapping[str, Any] | None, want: ConditionSpec, generation: Any) -> bool:
    return old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
        want.status, want.reason, want.message) and old.get("observedGeneration") == generation


def set_conditions(writer: StatusWriter, recorder: Recorder | None, kind: Kind, obj: Mapping[str, Any],
                   conditions: Sequence[ConditionSpec], absent: Sequence[str] = ()) -> bool:
    """Apply exactly `conditions` as the operator's field manager; returns True when it wrote.

    Server-side apply drops list-map entries this manager applied before and omits now, so a condition
    type listed in `absent` that the object still carries is removed by the same write. Nothing is
    written when every condition already says the same and none of `absent` is present. An Event goes
    out for each condition whose status or reason changed; a condition other than Ready is announced as
    a Warning while its status is True (it reports a problem), a Ready condition while it is False.
    """
    meta = obj["metadata"]
    generation = meta.get("generation")
    olds = {want.type: find_condition(obj, want.type) for want in conditions}
    if all(_unchanged(olds[w.type], w, generation) for w in conditions) and not any(
            find_condition(obj, t) is not None for t in absent):
        return False
    body_conds = []
    for want in conditions:
        old = olds[want.type]
        transition = old is None or old.get("status") != want.status
        cond: dict[str, Any] = {
            "type": want.type, "status": want.status, "reason": want.reason, "message": want.message,
            "lastTransitionTime": now_rfc3339() if transition or old is None else old.get("lastTransitionTime"),
        }
        if generation is not None:
            cond["observedGeneration"] = generation
        body_conds.append(cond)
    body = {
        "apiVersion": kind.api_version, "kind": kind.kind,
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace")},
        "status": {"conditions": body_conds},
    }
    writer.patch(kind, meta["name"], body, meta.get("namespace"), patch_type="apply",
                 field_manager=consts.FIELD_MANAGER, subresource="status", force=True)
    if recorder is not None:
        for want in conditions:
            old = olds[want.type]
            if old is not None and old.get("status") == want.status and old.get("reason") == want.reason:
                continue
            problem = want.status == ("False" if want.type == consts.CONDITION_READY else "True")
            try:
                recorder.event(obj, "Warning" if problem else "Normal", want.reason, want.message)
            except (ValueError, TypeError) as exc:  # an object we cannot point an Event at; never fail
                log.warning("event not recorded", error=str(exc), name=meta["name"])
    return True
