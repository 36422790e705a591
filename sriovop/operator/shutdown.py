"""What the operator undoes when it stops (upstream's utils.Shutdown), so that a cluster without a
running operator is not wedged by it.

- SriovNetworks in the operator namespace carry the netattdef finalizer; with no operator to remove
  it, deleting them (or their namespace) would hang. It is removed (IB and OVS networks are left
  alone, as upstream does).
- The operator's admission webhooks use failurePolicy Fail; with the webhook down, every write of our
  kinds would be refused. They are set to Ignore; the operator-config controller sets them back when
  it next runs.

Reads are uncached (the managers and their caches are already stopped), and each write retries on
conflict and on transient errors so a busy API server does not leave half the work undone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.render.webhook_configs import with_failure_policy
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, Conflict, ConnectionFailed, NotFound, ServerError, TooManyRequests
from sriovop.runtime.kinds import MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION, Kind

log = structlog.get_logger(__name__)

WEBHOOK_CONFIGURATIONS: tuple[tuple[Kind, str], ...] = (
    (VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
    (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
    (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME),
)

_retry = retry(
    retry=retry_if_exception_type((Conflict, ServerError, TooManyRequests, ConnectionFailed)),
    stop=stop_after_attempt(5), wait=wait_exponential(multiplier=0.1, max=2.0), reraise=True,
)


@dataclass
class CleanupReport:
    finalizers_removed: list[str] = field(default_factory=list)
    webhooks_ignored: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@_retry
def _remove_finalizer(client: Client, namespace: str, name: str) -> bool:
    network = client.get(SRIOV_NETWORK, name, namespace)
    finalizers = list(network["metadata"].get("finalizers") or [])
    if consts.NETATTDEF_FINALIZER not in finalizers:
        return False
    finalizers.remove(consts.NETATTDEF_FINALIZER)
    client.patch(SRIOV_NETWORK, name, {"metadata": {
        "finalizers": finalizers or None, "resourceVersion": network["metadata"]["resourceVersion"]}}, namespace)
    return True


@_retry
def _ignore_failures(client: Client, kind: Kind, name: str) -> bool:
    config: dict[str, Any] = client.get(kind, name)
    if all(hook.get("failurePolicy") == "Ignore" for hook in config.get("webhooks") or []):
        return False
    client.update(kind, with_failure_policy(config, "Ignore"))
    return True


def cleanup(client: Client, namespace: str) -> CleanupReport:
    report = CleanupReport()
    try:
        networks = client.list(SRIOV_NETWORK, namespace)
    except ApiError as exc:
        report.errors.append(f"listing SriovNetworks in {namespace}: {exc}")
        networks = []
    for network in networks:
        name = network["metadata"]["name"]
        if consts.NETATTDEF_FINALIZER not in (network["metadata"].get("finalizers") or []):
            continue
        try:
            if _remove_finalizer(client, namespace, name):
                report.finalizers_removed.append(f"{namespace}/{name}")
        except NotFound:
            pass
        except ApiError as exc:
            report.errors.append(f"removing the finalizer of SriovNetwork {namespace}/{name}: {exc}")
    for kind, name in WEBHOOK_CONFIGURATIONS:
        try:
            if _ignore_failures(client, kind, name):
                report.webhooks_ignored.append(f"{kind.kind}/{name}")
        except NotFound:
            pass
        except ApiError as exc:
            report.errors.append(f"setting failurePolicy Ignore on {kind.kind} {name}: {exc}")
    log.info("shutdown cleanup done", finalizers_removed=report.finalizers_removed,
             webhooks_ignored=report.webhooks_ignored, errors=report.errors)
    return report
