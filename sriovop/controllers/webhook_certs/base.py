"""What both ways of running the certificate controller share, without importing `cryptography`.

The operator process runs the certificate decisions in a short child process (`isolated.py`), so the
cryptography library, about 9 MiB once imported, never stays in the long-lived operator; tests and the
child itself run them in process (`controller.py`). Both are one leader-gated controller with a single
request, set up and triggered the same way.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.webhook_certs.settings import CertSettings
from sriovop.runtime.controller import Controller, Request, Result
from sriovop.runtime.kinds import MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION, Kind

CONTROLLER_NAME = "webhook-certificates"
#: Repair what someone changed or deleted at least this often (seconds).
RESYNC_PERIOD = 60.0
#: The shortest requeue: a decision due now is looked at again without spinning.
MIN_REQUEUE = 0.2

Clock = Callable[[], datetime.datetime]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class ServingTarget:
    """One admission server: its Secret, its Service (the certificate's names) and the admission
    configurations whose `caBundle` must trust it."""

    secret: str
    service: str
    configurations: tuple[tuple[Kind, str], ...]


def default_targets(operator_webhook_secret: str, injector_secret: str) -> tuple[ServingTarget, ...]:
    # Service names as rendered by sriovop/render/workloads.py.
    return (
        ServingTarget(operator_webhook_secret, "operator-webhook-service",
                      ((VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
                       (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME))),
        ServingTarget(injector_secret, "network-resources-injector-service",
                      ((MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME),)),
    )


class CertControllerBase:
    """```
    certs.setup(mgr)                  # leader-gated; reconciles at once, then at each deadline
    certs.trigger()                   # e.g. after the operator-config controller created a configuration
    ```"""

    def __init__(self, client: Any, namespace: str, settings: CertSettings, targets: tuple[ServingTarget, ...],
                 *, clock: Clock = utc_now, resync: float = RESYNC_PERIOD) -> None:
        self.client = client
        self.namespace = namespace
        self.settings = settings
        self.targets = targets
        self.clock = clock
        self.resync = resync
        self.request = Request(namespace, CONTROLLER_NAME)
        self._controller: Controller | None = None

    def setup(self, manager: Any) -> Controller:
        ctrl = Controller(CONTROLLER_NAME, self.reconcile, registry=manager.registry)
        ctrl.enqueue(self.request)
        manager.add(ctrl)
        self._controller = ctrl
        return ctrl

    def trigger(self) -> None:
        if self._controller is not None:
            self._controller.enqueue(self.request)

    def reconcile(self, req: Request | None = None) -> Result:
        raise NotImplementedError

    def requeue_until(self, decision: datetime.datetime, now: datetime.datetime) -> Result:
        """Look again at the next decision, or at the resync period when that comes first."""
        wait = min((decision - now).total_seconds(), self.resync)
        return Result(requeue_after=max(MIN_REQUEUE, wait))
