"""SriovNetworkNodePolicy validation: the shared policy rules (`sriovop.policyrules.judge`) answered as
an admission verdict whose message names the object, the field and the reason."""

from __future__ import annotations

from sriovop.policyrules.dynamic import dynamic_checks
from sriovop.policyrules.judge import judge_policy
from sriovop.policyrules.static import static_checks
from sriovop.webhook.admission import AdmissionRequest, Verdict
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.settings import WebhookSettings

__all__ = ["dynamic_checks", "static_checks", "validate_policy"]


def validate_policy(request: AdmissionRequest, view: ClusterView, settings: WebhookSettings) -> Verdict:
    judgement = judge_policy(request.subject, request.name, request.namespace, request.operation,
                             settings.namespace, view, settings.dev_mode)
    if judgement.denied is not None:
        return Verdict.deny(request, judgement.denied, judgement.warnings)
    return Verdict.allow(judgement.warnings)
