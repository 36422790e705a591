"""The admission.k8s.io/v1 AdmissionReview envelope: strict parsing in, one response shape out.

A body that is not a well-formed AdmissionReview is the caller's bug (HTTP 400); everything inside a
well-formed review is judged and answered with allowed or denied plus a message, never an HTTP error.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from sriovop.policyrules.denied import Denied

__all__ = ["AdmissionRequest", "BadReview", "Denied", "Verdict", "parse_review", "review_response"]

REVIEW_API_VERSION = "admission.k8s.io/v1"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class BadReview(ValueError):
    """The HTTP body is not an AdmissionReview this server can answer (→ 400)."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    uid: str
    kind: str
    group: str
    resource: str
    operation: str
    name: str
    namespace: str
    obj: dict[str, Any] | None
    old_obj: dict[str, Any] | None
    dry_run: bool = False

    @property
    def subject(self) -> dict[str, Any]:
        """The object a rule judges: the old object for DELETE (the new one is absent then)."""
        if self.operation == "DELETE" or self.obj is None:
            return self.old_obj or {}
        return self.obj

    def describe(self) -> str:
        """`Kind "ns/name"`, the way every denial names the object."""
        meta = self.subject.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        name = self.name or _str(meta.get("name"))
        if not name:
            name = f"{_str(meta.get('generateName'))}*" if _str(meta.get("generateName")) else "(unnamed)"
        ns = self.namespace or _str(meta.get("namespace"))
        return f'{self.kind or "object"} "{ns}/{name}"' if ns else f'{self.kind or "object"} "{name}"'


@dataclass(slots=True)
class Verdict:
    allowed: bool
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    patch: list[dict[str, Any]] | None = None

    @classmethod
    def allow(cls, warnings: list[str] | None = None, patch: list[dict[str, Any]] | None = None) -> Verdict:
        return cls(True, "", list(warnings or []), patch)

    @classmethod
    def deny(cls, request: AdmissionRequest, denied: Denied, warnings: list[str] | None = None) -> Verdict:
        return cls(False, f"{request.describe()} is invalid: {denied.field}: {denied.reason}", list(warnings or []))


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _optional_object(value: Any, what: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadReview(f"request.{what} must be a JSON object, got {type(value).__name__}")
    return value


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode and check an AdmissionReview; raises BadReview naming the first thing wrong."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadReview(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadReview("body must be a JSON object (an AdmissionReview)")
    if doc.get("apiVersion") != REVIEW_API_VERSION or doc.get("kind") != "AdmissionReview":
        raise BadReview(
            f"body must be an AdmissionReview of {REVIEW_API_VERSION}, got apiVersion={doc.get('apiVersion')!r} "
            f"kind={doc.get('kind')!r}"
        )
    req = doc.get("request")
    if not isinstance(req, dict):
        raise BadReview("AdmissionReview.request is missing or not an object")
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid must be a non-empty string")
    kind = req.get("kind")
    if not isinstance(kind, dict) or not isinstance(kind.get("kind"), str):
        raise BadReview("request.kind must be an object with a string kind")
    resource = req.get("resource")
    resource = resource if isinstance(resource, dict) else {}
    operation = req.get("operation")
    if not isinstance(operation, str) or operation not in OPERATIONS:
        raise BadReview(f"request.operation must be one of {sorted(OPERATIONS)}, got {operation!r}")
    for key in ("name", "namespace"):
        if req.get(key) is not None and not isinstance(req.get(key), str):
            raise BadReview(f"request.{key} must be a string")
    return AdmissionRequest(
        uid=uid,
        kind=kind["kind"],
        group=_str(kind.get("group")),
        resource=_str(resource.get("resource")),
        operation=operation,
        name=_str(req.get("name")),
        namespace=_str(req.get("namespace")),
        obj=_optional_object(req.get("object"), "object"),
        old_obj=_optional_object(req.get("oldObject"), "oldObject"),
        dry_run=req.get("dryRun") is True,
    )


def review_response(uid: str, verdict: Verdict) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": verdict.message}
    if verdict.warnings:
        response["warnings"] = verdict.warnings
    if verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(verdict.patch).encode()).decode()
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": response}
