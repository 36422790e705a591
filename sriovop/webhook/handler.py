"""Routing of admission requests to rules, with the guarantees the server relies on.

`AdmissionHandler.handle(path, body)` never raises: a malformed review is a 400, a rule that crashes
is a denial that says so (and is logged with its traceback), so one bad request cannot take the
webhook down or turn into a 500 that the API server would treat as a webhook outage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import Counter, Histogram

from sriovop.api.v1 import kinds
from sriovop.api.v1.policydefaults import policy_defaults_patch
from sriovop.webhook.admission import AdmissionRequest, BadReview, Verdict, parse_review, review_response
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.inject import mutate_pod
from sriovop.webhook.settings import WebhookSettings
from sriovop.webhook.switches_source import StaticSwitches, SwitchesSource
from sriovop.webhook.validate_configs import validate_operator_config, validate_pool_config
from sriovop.webhook.validate_network import validate_network
from sriovop.webhook.validate_policy import validate_policy

log = structlog.get_logger(__name__)

MUTATING_PATH = "/mutating-custom-resource"
VALIDATING_PATH = "/validating-custom-resource"
POD_MUTATING_PATH = "/mutate"

REQUESTS = Counter(
    "sriovop_webhook_requests_total", "Admission requests answered, by path and outcome", ["path", "outcome"]
)
LATENCY = Histogram(
    "sriovop_webhook_request_duration_seconds", "Time to judge one admission request", ["path"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
)

Rule = Callable[[AdmissionRequest], Verdict]


def _being_deleted(obj: dict[str, Any] | None) -> bool:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return isinstance(meta, dict) and bool(meta.get("deletionTimestamp"))


class AdmissionHandler:
    def __init__(self, view: ClusterView, settings: WebhookSettings, switches: SwitchesSource | None = None) -> None:
        """`switches` feeds the pod injector (default: upstream's flag defaults, no ConfigMap)."""
        self.view = view
        self.settings = settings
        self.switches: SwitchesSource = switches or StaticSwitches()
        self._routes: dict[str, Rule] = {
            MUTATING_PATH: self._mutate_custom_resource,
            VALIDATING_PATH: self._validate_custom_resource,
            POD_MUTATING_PATH: self._mutate_pod,
        }

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._routes)

    def handle(self, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body)."""
        rule = self._routes.get(path)
        if rule is None:
            return 404, {"error": f"no admission endpoint at {path}; known: {sorted(self._routes)}"}
        started = time.perf_counter()
        try:
            request = parse_review(body)
        except BadReview as exc:
            REQUESTS.labels(path, "bad_request").inc()
            return 400, {"error": str(exc)}
        except Exception as exc:  # a parser bug must still be a 400, not a dead connection
            log.exception("admission_review_unparseable", path=path)
            REQUESTS.labels(path, "bad_request").inc()
            return 400, {"error": f"cannot read the AdmissionReview: {type(exc).__name__}: {exc}"}
        try:
            verdict = rule(request)
        except Exception as exc:  # a bug in a rule must not become a 500 or kill the thread
            log.exception("admission_rule_failed", path=path, kind=request.kind, name=request.name)
            reason = f"the webhook failed to judge it: {type(exc).__name__}: {exc}"
            verdict = Verdict(False, f"{request.describe()}: {reason}")
        LATENCY.labels(path).observe(time.perf_counter() - started)
        REQUESTS.labels(path, "allowed" if verdict.allowed else "denied").inc()
        if not verdict.allowed:
            log.info("admission_denied", path=path, kind=request.kind, namespace=request.namespace,
                     name=request.name, operation=request.operation, message=verdict.message)
        return 200, review_response(request.uid, verdict)

    def _mutate_custom_resource(self, request: AdmissionRequest) -> Verdict:
        if request.kind != kinds.SRIOV_NETWORK_NODE_POLICY.kind or request.operation not in ("CREATE", "UPDATE"):
            return Verdict.allow()
        return Verdict.allow(patch=policy_defaults_patch(request.obj or {}) or None)

    def _validate_custom_resource(self, request: AdmissionRequest) -> Verdict:
        if request.operation == "UPDATE" and _being_deleted(request.obj):
            # Finalizer removal on an object being deleted must never be blocked: a rule that no longer
            # holds (its node is gone, say) would otherwise leave the object stuck in Terminating.
            return Verdict.allow()
        kind = request.kind
        if kind == kinds.SRIOV_NETWORK_NODE_POLICY.kind:
            return validate_policy(request, self.view, self.settings)
        if kind == kinds.SRIOV_OPERATOR_CONFIG.kind:
            return validate_operator_config(request, self.view, self.settings)
        if kind == kinds.SRIOV_NETWORK_POOL_CONFIG.kind:
            return validate_pool_config(request, self.view, self.settings)
        if kind in {k.kind for k in kinds.NETWORK_KINDS}:
            return validate_network(request, self.settings)
        return Verdict.allow()

    def _mutate_pod(self, request: AdmissionRequest) -> Verdict:
        if request.kind != "Pod":
            return Verdict.allow()
        return mutate_pod(request, self.view, self.switches.current())
