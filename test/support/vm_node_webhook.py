"""Switching the operator webhook off and on, as a user must to get a policy past its validation.

`SriovOperatorConfig.spec.enableOperatorWebhook: false` makes the operator delete its validating and
mutating webhook configurations (upstream's behaviour); kube-apiserver stops calling them a moment later
(its informer), so writes that the webhook would deny are retried until they are admitted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import VALIDATING_WEBHOOK_CONFIGURATION

Wait = Callable[..., Any]


def operator_webhook_present(kube: Client) -> bool:
    try:
        kube.get(VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
    except NotFound:
        return False
    return True


def set_operator_webhook(kube: Client, namespace: str, enabled: bool, wait: Wait) -> None:
    """Patch the default SriovOperatorConfig and wait until the operator has (re)created or deleted the
    validating webhook configuration."""
    kube.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"enableOperatorWebhook": enabled}}, namespace)
    state = "present" if enabled else "deleted"
    wait(f"the operator webhook configuration {state}", lambda: operator_webhook_present(kube) == enabled)


def admitted(write: Callable[[], Any], errors: list[str]) -> bool:
    """One attempt at a write that admission may still refuse for a moment; the refusals are kept."""
    try:
        write()
    except NotFound:
        raise
    except ApiError as exc:
        errors.append(str(exc)[:300])
        return False
    return True
