"""SriovOperatorConfig `default`: deploys the config daemon, the device plugin and the webhooks.

Only the object named `default` in the operator namespace is honoured (others are ignored, as
upstream does). Each reconcile, in upstream's order: the operator's log level from `spec.logLevel`;
the webhooks (DaemonSet, Service and admission configurations, each pair deleted when its `enable…`
flag is off); the config-daemon DaemonSet (`configDaemonNodeSelector`); the device-plugin DaemonSet;
the metrics exporter's DaemonSet and Service (feature gate `metricsExporter`, deleted when off).
Objects are rendered by sriovop.render and applied create-or-merge-update (controllers/apply.py).
A finalizer makes sure that deleting the config also removes the admission configurations, which are
cluster-scoped and so cannot be garbage-collected through an ownerReference. The outcome is the
`Ready` condition (OperatorConfigReady / OperatorConfigSyncFailed); the sync repeats every 5 minutes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.controllers.apply import apply_object, delete_object, owner_reference
from sriovop.controllers.ready_condition import Recorder, set_ready
from sriovop.controllers.webhook_certs.settings import CertMode, CertSettings
from sriovop.render import metrics_exporter, webhook_configs, workloads
from sriovop.render.settings import RenderSettings
from sriovop.runtime.controller import Controller, Request, Result
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import (
    CONFIG_MAP,
    DAEMON_SET,
    MUTATING_WEBHOOK_CONFIGURATION,
    SERVICE,
    VALIDATING_WEBHOOK_CONFIGURATION,
    Kind,
)

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "sriovoperatorconfig"
#: Upstream's ResyncPeriod.
RESYNC_PERIOD = 300.0

#: `spec.logLevel` (0 basic .. 2 everything) → our level names.
LOG_LEVELS = {0: "info", 1: "debug", 2: "debug"}

#: The admission configurations the operator owns: (kind, name).
WEBHOOK_CONFIGURATIONS = (
    (VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
    (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
    (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME),
)


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
    `certs` says who provides the webhooks' certificates (webhook_certs/settings.py). In the
    self-managed mode the configurations are rendered without `caBundle` (an update keeps the live
    one) and `on_webhooks_applied` tells the certificate controller to write it.
    """

    def __init__(self, writer: Any, reader: Any, namespace: str, settings: RenderSettings,
                 recorder: Recorder | None = None, *, set_log_level: Callable[[str], None] | None = None,
                 certs: CertSettings | None = None,
                 on_webhooks_applied: Callable[[], None] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.writer = writer
        self.reader = reader
        self.namespace = namespace
        self.settings = settings
        self.recorder = recorder
        self.set_log_level = set_log_level
        self.certs = certs if certs is not None else CertSettings.from_env()
        self.on_webhooks_applied = on_webhooks_applied
        #: The metrics exporter's settings (METRICS_EXPORTER_*) are read from it when the gate is on.
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
        self._sync_metrics_exporter(config, workloads.feature_gate(config, consts.FG_METRICS_EXPORTER))

    def _sync_metrics_exporter(self, config: Mapping[str, Any], enabled: bool) -> None:
        """Feature gate metricsExporter: the exporter DaemonSet and its Service, deleted when off."""
        ns = self.namespace
        if not enabled:
            delete_object(self.writer, SERVICE, metrics_exporter.SERVICE_NAME, ns)
            delete_object(self.writer, DAEMON_SET, metrics_exporter.NAME, ns)
            return
        exporter = metrics_exporter.ExporterSettings.from_env(self.env, self.settings)
        apply_object(self.writer, DAEMON_SET, metrics_exporter.daemonset(self.settings, exporter, config), config)
        apply_object(self.writer, SERVICE, metrics_exporter.service(self.settings, exporter), config)

    def _endpoint(self, service: str, ca_bundle: bytes | None) -> webhook_configs.Endpoint:
        custom = ca_bundle if self.certs.mode == CertMode.CUSTOM else None
        return webhook_configs.Endpoint.service(service, self.namespace, ca_bundle=custom)

    def _ca_annotations(self, secret: str) -> dict[str, str] | None:
        """What makes a CA injector fill in caBundle (upstream: cert-manager's Certificate is named
        like the Secret it writes)."""
        if self.certs.mode == CertMode.OPENSHIFT:
            return dict(webhook_configs.OPENSHIFT_INJECT_CABUNDLE)
        if self.certs.mode == CertMode.CERT_MANAGER:
            return webhook_configs.cert_manager_ca_from(f"{self.namespace}/{secret}")
        return None

    def _webhooks_applied(self) -> None:
        if self.certs.mode == CertMode.SELF_MANAGED and self.on_webhooks_applied is not None:
            self.on_webhooks_applied()

    def _sync_operator_webhook(self, config: Mapping[str, Any], enabled: bool) -> None:
        ns = self.namespace
        if not enabled:
            delete_object(self.writer, VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
            delete_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)
            delete_object(self.writer, SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, ns)
            delete_object(self.writer, DAEMON_SET, workloads.OPERATOR_WEBHOOK_NAME, ns)
            return
        openshift = self.certs.mode == CertMode.OPENSHIFT
        apply_object(self.writer, DAEMON_SET, workloads.operator_webhook_daemonset(self.settings), config)
        apply_object(self.writer, SERVICE,
                     workloads.operator_webhook_service(self.settings, openshift_service_ca=openshift), config)
        endpoint = self._endpoint(workloads.OPERATOR_WEBHOOK_SERVICE, self.certs.operator_webhook_ca)
        validating, mutating = webhook_configs.operator_webhook_configs(
            endpoint, annotations=self._ca_annotations(self.settings.operator_webhook_secret))
        apply_object(self.writer, VALIDATING_WEBHOOK_CONFIGURATION, validating)
        apply_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION, mutating)
        self._webhooks_applied()

    def _create_if_absent(self, kind: Kind, obj: Mapping[str, Any], owner: Mapping[str, Any]) -> None:
        """Create `obj` (owned by `owner`) unless it exists; an existing one is the user's to edit."""
        meta = obj["metadata"]
        try:
            self.writer.get(kind, meta["name"], meta.get("namespace"))
        except NotFound:
            body = {**obj, "metadata": {**meta, "ownerReferences": [owner_reference(owner)]}}
            try:
                self.writer.create(kind, body, meta.get("namespace"))
            except Conflict as exc:
                if not exc.already_exists:
                    raise

    def _sync_injector(self, config: Mapping[str, Any], enabled: bool) -> None:
        ns = self.namespace
        if not enabled:
            delete_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME)
            delete_object(self.writer, SERVICE, workloads.INJECTOR_SERVICE, ns)
            delete_object(self.writer, DAEMON_SET, workloads.INJECTOR_NAME, ns)
            return
        openshift = self.certs.mode == CertMode.OPENSHIFT
        self._create_if_absent(CONFIG_MAP, workloads.injector_control_switches(self.settings), config)
        apply_object(self.writer, DAEMON_SET, workloads.injector_daemonset(self.settings), config)
        apply_object(self.writer, SERVICE,
                     workloads.injector_service(self.settings, openshift_service_ca=openshift), config)
        endpoint = self._endpoint(workloads.INJECTOR_SERVICE, self.certs.injector_ca)
        match_condition = workloads.feature_gate(config, consts.FG_RESOURCE_INJECTOR_MATCH_CONDITION)
        apply_object(self.writer, MUTATING_WEBHOOK_CONFIGURATION,
                     webhook_configs.injector_webhook_config(
                         endpoint, match_condition=match_condition,
                         annotations=self._ca_annotations(self.settings.injector_secret)))
        self._webhooks_applied()
