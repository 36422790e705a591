"""SriovOperatorConfig and SriovNetworkPoolConfig validation."""

from __future__ import annotations

from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.maxunavailable import MaxUnavailableError, validate_max_unavailable
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.fields import as_map, get_bool, get_int, get_map, get_str, get_str_list, loose_str
from sriovop.webhook.settings import WebhookSettings

DISABLE_DRAIN_WARNING = (
    "Node draining is disabled for applying SriovNetworkNodePolicy, it may result in workload interruption."
)
RDMA_MODE_WARNING = (
    "rdmaMode {mode}: the config daemon sets the RDMA netns mode on each selected node's running kernel, which "
    "the kernel refuses while other network namespaces (pods) exist; such a node is drained and rebooted with "
    "ib_core.netns_mode={value} (and the mode is kept in /etc/modprobe.d). Nodes without RDMA devices "
    "(ib_core not loaded) only get the setting for later."
)
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _identity(request: AdmissionRequest) -> tuple[str, str]:
    meta = request.subject.get("metadata")
    meta = as_map(meta)
    return (loose_str(meta.get("name")) or request.name, loose_str(meta.get("namespace")) or request.namespace)


def validate_operator_config(request: AdmissionRequest, view: ClusterView, settings: WebhookSettings) -> Verdict:
    if request.operation == "DELETE":
        return Verdict.allow()
    name, namespace = _identity(request)
    warnings: list[str] = []
    try:
        if name != consts.DEFAULT_CONFIG_NAME or namespace != settings.namespace:
            raise Denied(
                "metadata.name",
                f"only default SriovOperatorConfig in {settings.namespace} namespace is used "
                f"(this one is {namespace}/{name})",
            )
        spec = get_map(request.subject, "spec", "spec")
        disable_drain = get_bool(spec, "disableDrain", "spec.disableDrain")
        _check_operator_config_schema(spec)
        if disable_drain:
            warnings.append(DISABLE_DRAIN_WARNING)
            _check_disable_drain_transition(request, view)
    except Denied as denied:
        return Verdict.deny(request, denied, warnings)
    return Verdict.allow(warnings)


def _check_operator_config_schema(spec: dict[str, Any]) -> None:
    level = get_int(spec, "logLevel", "spec.logLevel")
    if not 0 <= level <= 2:
        raise Denied("spec.logLevel", f"logLevel {level} is out of range 0..2")
    mode = get_str(spec, "configurationMode", "spec.configurationMode")
    if mode not in ("", "daemon", "systemd"):
        raise Denied("spec.configurationMode", f"unsupported value {mode!r}: must be 'daemon' or 'systemd'")
    for i, plugin in enumerate(get_str_list(spec, "disablePlugins", "spec.disablePlugins")):
        if plugin != "mellanox":
            raise Denied(f"spec.disablePlugins[{i}]", f"unsupported value {plugin!r}: only 'mellanox' can be disabled")
    for key in ("enableInjector", "enableOperatorWebhook", "useCDI", "enableOvsOffload"):
        get_bool(spec, key, f"spec.{key}")


def _check_disable_drain_transition(request: AdmissionRequest, view: ClusterView) -> None:
    """Turning drain off while a node is mid-update would leave that node cordoned for good.

    Upstream compares with the stored object it GETs; the admission request already carries it as
    oldObject, so no read is needed (CREATE has no previous value and nothing to compare)."""
    old = request.old_obj
    if request.operation != "UPDATE" or not isinstance(old, dict):
        return
    old_spec = as_map(old.get("spec"))
    if old_spec.get("disableDrain") is True:
        return
    view.fresh()
    for state in view.node_states():
        status = as_map(state.get("status"))
        if status.get("syncStatus") == consts.SYNC_STATUS_IN_PROGRESS:
            node = loose_str((state.get("metadata") or {}).get("name"))
            raise Denied(
                "spec.disableDrain",
                f"can't set Spec.DisableDrain = true while node[{node}] is updating (its NodeState syncStatus is "
                "InProgress); retry once it is Succeeded or Failed",
            )


def _check_label_selector(selector: Any) -> None:
    if not isinstance(selector, dict):
        raise Denied("spec.nodeSelector", f"must be a label selector object, got {type(selector).__name__}")
    labels = get_map(selector, "matchLabels", "spec.nodeSelector.matchLabels")
    for key, value in labels.items():
        if not isinstance(value, str):
            raise Denied(f"spec.nodeSelector.matchLabels.{key}", "must be a string")
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise Denied("spec.nodeSelector.matchExpressions", "must be a list")
    for i, expr in enumerate(exprs):
        path = f"spec.nodeSelector.matchExpressions[{i}]"
        if not isinstance(expr, dict):
            raise Denied(path, "must be an object with key, operator and values")
        if not get_str(expr, "key", f"{path}.key"):
            raise Denied(f"{path}.key", "must not be empty")
        op = get_str(expr, "operator", f"{path}.operator")
        if op not in _SELECTOR_OPERATORS:
            allowed = ", ".join(_SELECTOR_OPERATORS)
            raise Denied(f"{path}.operator", f"unsupported operator {op!r}: must be one of {allowed}")
        values = get_str_list(expr, "values", f"{path}.values")
        if op in ("In", "NotIn") and not values:
            raise Denied(f"{path}.values", f"must be non-empty when the operator is {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise Denied(f"{path}.values", f"must be empty when the operator is {op}")


def validate_pool_config(request: AdmissionRequest, view: ClusterView, settings: WebhookSettings) -> Verdict:
    del view, settings  # pool rules are static
    if request.operation == "DELETE":
        return Verdict.allow()
    try:
        spec = get_map(request.subject, "spec", "spec")
        hwol = get_map(spec, "ovsHardwareOffloadConfig", "spec.ovsHardwareOffloadConfig")
        hwol_name = get_str(hwol, "name", "spec.ovsHardwareOffloadConfig.name")
        max_unavailable = spec.get("maxUnavailable")
        selector = spec.get("nodeSelector")
        if (max_unavailable is not None or selector is not None) and hwol_name:
            raise Denied(
                "spec.ovsHardwareOffloadConfig",
                "SriovNetworkPoolConfig can't have both parallel configuration (maxUnavailable or nodeSelector) "
                "and OvsHardwareOffloadConfig",
            )
        if max_unavailable is not None:
            try:
                validate_max_unavailable(max_unavailable)
            except MaxUnavailableError as exc:
                raise Denied("spec.maxUnavailable", f"invalid maxUnavailable: {exc}") from None
        if selector is not None:
            _check_label_selector(selector)
        rdma = get_str(spec, "rdmaMode", "spec.rdmaMode")
        if rdma not in ("", consts.RDMA_MODE_SHARED, consts.RDMA_MODE_EXCLUSIVE):
            raise Denied("spec.rdmaMode", f"unsupported value {rdma!r}: must be 'shared' or 'exclusive'")
    except Denied as denied:
        return Verdict.deny(request, denied)
    old_mode = loose_str(as_map(as_map(request.old_obj).get("spec")).get("rdmaMode")) if request.old_obj else ""
    if rdma and rdma != old_mode:
        value = 1 if rdma == consts.RDMA_MODE_SHARED else 0
        return Verdict.allow([RDMA_MODE_WARNING.format(mode=rdma, value=value)])
    return Verdict.allow()
