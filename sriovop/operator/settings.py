"""The operator's environment, read once at start and checked, with upstream's variable names.

Failing at start with the variable's name beats upstream's behaviour for most of these (an empty
RESOURCE_PREFIX is the one upstream also refuses).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from sriovop.api.v1 import consts
from sriovop.controllers.webhook_certs.settings import CertSettings
from sriovop.render.settings import RenderSettings

log = structlog.get_logger(__name__)


class OperatorSettingsError(ValueError):
    """The environment cannot run an operator; the message names the variable and what to do."""


@dataclass(frozen=True)
class OperatorSettings:
    namespace: str
    resource_prefix: str
    dev_mode: bool
    stale_node_state_cleanup_delay_minutes: int
    render: RenderSettings
    certs: CertSettings = field(default_factory=CertSettings)

    @classmethod
    def from_env(cls, namespace: str | None, env: Mapping[str, str] | None = None, *,
                 webhook_ca_lifetime: str | None = None,
                 webhook_cert_lifetime: str | None = None) -> OperatorSettings:
        e = os.environ if env is None else env
        ns = namespace or e.get(consts.ENV_NAMESPACE, "")
        if not ns:
            raise OperatorSettingsError(
                f"the operator namespace is unknown: pass --namespace or set {consts.ENV_NAMESPACE}")
        prefix = e.get(consts.ENV_RESOURCE_PREFIX, "")
        if not prefix:
            raise OperatorSettingsError(
                f"{consts.ENV_RESOURCE_PREFIX} is empty: set it to the device-plugin resource prefix "
                f"(e.g. {consts.DEFAULT_RESOURCE_PREFIX}); NADs and drains depend on it")
        try:
            render = RenderSettings.from_env(ns, e)
            certs = CertSettings.from_env(e, ca_lifetime=webhook_ca_lifetime, cert_lifetime=webhook_cert_lifetime)
        except ValueError as exc:
            raise OperatorSettingsError(str(exc)) from exc
        return cls(namespace=ns, resource_prefix=prefix,
                   dev_mode=(e.get(consts.ENV_DEV_MODE) or "").upper() == "TRUE",
                   stale_node_state_cleanup_delay_minutes=stale_delay_minutes(e), render=render, certs=certs)


def stale_delay_minutes(env: Mapping[str, str]) -> int:
    """STALE_NODE_STATE_CLEANUP_DELAY_MINUTES: default 30, 0 deletes at once; invalid falls back to 30
    (as upstream), with a warning naming the value."""
    name = consts.ENV_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES
    raw = env.get(name, "").strip()
    if not raw:
        return consts.DEFAULT_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        log.warning("invalid stale NodeState cleanup delay; using the default", variable=name, value=raw,
                    default=consts.DEFAULT_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES)
        return consts.DEFAULT_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES
    return value
