"""SriovOperatorConfig `default`: deploys the config daemon, the device plugin and the webhooks.

Only the object named `default` in the operator namespace is honoured (others are ignored, as
upstream does). Each reconcile, in upstream's order: the operator's log level from `spec.logLevel`;
the webhooks (Deployment, Service and admission configurations, each pair deleted when its `enable…`
flag is off); the config-daemon DaemonSet (`configDaemonNodeSelector`); the device-plugin DaemonSet.
Objects are rendered by sriovop.render and applied create-or-merge-update (controllers/apply.py).
A finalizer makes sure that deleting the config also removes the admission configurations, which are
cluster-scoped and so cannot be garbage-collected through an ownerReference. The outcome is the
`Ready` condition (OperatorConfigReady / OperatorConfigSyncFailed); the sync repeats every 5 minutes.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.controllers.apply import apply_object, delete_object
from sriovop.controllers.ready_condition import Recorder, set_ready
from sriovop.render import webhook_configs, workloads
from sriovop.render.settings import RenderSettings
from sriovop.runtime.controller import Controller, Request, Result
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import (
    DAEMON_SET,
    DEPLOYMENT,
    MUTATING_WEBHOOK_CONFIGURATION,
    SERVICE,
    VALIDATING_WEBHOOK_CONFIGURATION,
)

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "sriovoperatorconfig"
#: Upstream's ResyncPeriod.
RESYNC_PERIOD = 300.0
#: Base64 PEM CA bundles for the webhook configurations when no cert-manager/service-ca injects them.
ENV_OPERATOR_WEBHOOK_CA = "ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT"
ENV_INJECTOR_CA = "ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_CA_CRT"

#: `spec.logLevel` (0 basic .. 2 everything) → our level names.
LOG_LEVELS = {0: "info", 1: "debug", 2: "debug"}

#: The admission configurations the operator owns: (kind, name).
WEBHOOK_CONFIGURATIONS = (
    (VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
    (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
    (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME),
)


def _ca_from_env(name: str, env: Mapping[str, str]) -> bytes | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"environment variable {name} must be a base64-encoded PEM CA bundle: {exc}") from exc


def _owned_by_default(obj: Mapping[str, Any]) -> bool:
    return any(ref.get("kind") == SRIOV_OPERATOR_CONFIG.kind and ref.get("name") == consts.DEFAULT_CONFIG_NAME
               for ref in obj["metadata"].get("ownerReferences") or [])


class OperatorConfigReconciler:
    """```
    OperatorConfigReconciler(mgr.server_client, mgr.client, namespace, RenderSettings.from_env(namespace),
                             recorder, set_log_level=sriovop.logsetup.set_level).setup(mgr)
    ```
    `writer` reads and writes the rendered objects on the server (fresh reads keep updates from
    conflicting with a lagging cache); `reader` (the manager's cached client) reads the config itself.
    """

    def __init__(self, writer: Any, reader: Any, namespace: str, settings: RenderSettings,
                 recorder: Recorder | None = None, *, set_log_level: Callable[[str], None] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.writer = writer
        self.reader = reader
        self.namespace = namespace
        self.settings = settings
        self.recorder = recorder
        self.set_log_level = set_log_level
        self.env = os.environ if env is None else env
        self._log_level: str | None = None

    def setup(self, manager: Any) -> Controller:
        ctrl = Controller(CONTROLLER_NAME, self.reconcile, registry=manager.registry)
        default = Request(self.namespace, consts.DEFAULT_CONFIG_NAME)
        ctrl.watches(manager.cache.informers_for(SRIOV_OPERATOR_CONFIG),
                     predicates=[lambda o: o["metadata"]["name"] == consts.DEFAULT_CONFIG_NAME])
        ctrl.watches(manager.cache.informers_for(DAEMON_SET), map_func=lambda o: [default],
                     predicates=[_owned_by_default])
        manager.add(ctrl)
        return ctrl

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, req: Request) -> Result | None:
        if req.name != consts.DEFAULT_CONFIG_NAME or req.namespace != self.namespace:
            return None
        try:
            config = self.reader.get(SRIOV_OPERATOR_CONFIG, req.name, req.namespace)
        except NotFound:
            return None
        meta = config["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            for kind, name in WEBHOOK_CONFIGURATIONS:
                delete_object(self.writer, kind, name)
            if consts.OPERATOR_CONFIG_FINALIZER in finalizers:
                finalizers.remove(consts.OPERATOR_CONFIG_FINALIZER)
                self._patch_finalizers(config, finalizers)
            return None
        if consts.OPERATOR_CONFIG_FINALIZER not in finalizers:
            config = self._patch_finalizers(config, [*finalizers, consts.OPERATOR_CONFIG_FINALIZER])
        self._apply_log_level(config)
        try:
            self.sync(config)
        except Exception as exc:
            set_ready(self.writer, self.recorder, SRIOV_OPERATOR_CONFIG, config, False,
                      consts.REASON_OPERATOR_CONFIG_SYNC_FAILED, str(exc))
            raise
        set_ready(self.writer, self.recorder, SRIOV_OPERATOR_CONFIG, config, True,
                  consts.REASON_OPERATOR_CONFIG_READY, "Operator configuration is ready")
        return Result(requeue_after=RESYNC_PERIOD)

    def _patch_finalizers(self, config: Mapping[str, Any], finalizers: list[str]) -> Any:
        meta = config["metadata"]
        return self.writer.patch(SRIOV_OPERATOR_CONFIG, meta["name"], {"metadata": {
            "finalizers": finalizers or None, "resourceVersion": meta["resourceVersion"]}}, meta["namespace"])

    def _apply_log_level(self, config: Mapping[str, Any]) -> None:
        raw = (config.get("spec") or {}).get("logLevel")
        if raw is None or self.set_log_level is None:
            return
        level = LOG_LEVELS.get(int(raw), "debug")
        if level != self._log_level:
            self.set_log_level(level)
            self._log_level = level
            log.info("operator log level changed", log_level=level, logLevel=raw)

    # -- what gets applied -------------------------------------------------------------------------

    def sync(self, config: Mapping[str, Any]) -> None:
        spec = config.get("spec") or {}
        self._sync_operator_webhook(config, bool(spec.get("enableOperatorWebhook")))
        self._sync_injector(config, bool(spec.get("enableInjector")))
        apply_object(self.writer, DAEMON_SET, workloads.config_daemon_daemonset(self.settings, config), config)
        apply_object(self.writer, DAEMON_SET, workloads.device_plugin_daemonset(self.settings, config), config)

    def _sync_operator_webhook(self, config: Mapping[str, Any], enabled: bool) -> None:
        ns = self.namespace
        if not enabled:
            delete_object(self.writer, VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
            delete_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
            delete_object(self.writer, SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, ns)
            delete_object(self.writer, DEPLOYMENT, workloads.OPERATOR_WEBHOOK_NAME, ns)
            return
        apply_object(self.writer, DEPLOYMENT, workloads.operator_webhook_deployment(self.settings), config)
        apply_object(self.writer, SERVICE, workloads.operator_webhook_service(self.settings), config)
        endpoint = webhook_configs.Endpoint.service(workloads.OPERATOR_WEBHOOK_SERVICE, ns,
                                                    ca_bundle=_ca_from_env(ENV_OPERATOR_WEBHOOK_CA, self.env))
        validating, mutating = webhook_configs.operator_webhook_configs(endpoint)
        apply_object(self.writer, VALIDATING_WEBHOOK_CONFIGURATION, validating)
        apply_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION, mutating)

    def _sync_injector(self, config: Mapping[str, Any], enabled: bool) -> None:
        ns = self.namespace
        if not enabled:
            delete_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME)
            delete_object(self.writer, SERVICE, workloads.INJECTOR_SERVICE, ns)
            delete_object(self.writer, DEPLOYMENT, workloads.INJECTOR_NAME, ns)
            return
        apply_object(self.writer, DEPLOYMENT, workloads.injector_deployment(self.settings), config)
        apply_object(self.writer, SERVICE, workloads.injector_service(self.settings), config)
        endpoint = webhook_configs.Endpoint.service(workloads.INJECTOR_SERVICE, ns,
                                                    ca_bundle=_ca_from_env(ENV_INJECTOR_CA, self.env))
        match_condition = workloads.feature_gate(config, consts.FG_RESOURCE_INJECTOR_MATCH_CONDITION)
        apply_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION,
                     webhook_configs.injector_webhook_config(endpoint, match_condition=match_condition))
