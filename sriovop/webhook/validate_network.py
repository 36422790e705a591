"""SriovNetwork, SriovIBNetwork and OVSNetwork validation.

The rule: what upstream admits *and renders* into a NetworkAttachmentDefinition is admitted here too.
Where we see a problem upstream does not, the object is admitted with an admission warning, and the
controller reports the same text on a separate `SpecWarning` condition while Ready says what upstream
would (`sriovop.api.v1.networkproblems`). docs/networks-vs-upstream.md lists every case.

Denied, besides upstream's one rule (`networkNamespace` only in the operator namespace):
- raw-JSON fields (`capabilities`, `ipam`, `metaPlugins`) that do not parse, and string fields whose
  quotes break out of the CNI config's JSON string. Upstream admits these but can never render them (its
  reconcile fails on the JSON forever and the network never gets a NAD); denying says why at once.
- out-of-range numbers and unknown enum values. The CRD schema (upstream's too) rejects these before any
  webhook runs; the checks here only matter when the webhook is called on its own.
"""

from __future__ import annotations

import json
from typing import Any

from sriovop.api.v1.networkproblems import network_spec_problems
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.fields import get_int, get_map, get_str, loose_str
from sriovop.webhook.settings import WebhookSettings

_ENUMS = {
    "vlanProto": ("802.1q", "802.1Q", "802.1ad", "802.1AD"),
    "spoofChk": ("on", "off"),
    "trust": ("on", "off"),
    "linkState": ("auto", "enable", "disable"),
    "logLevel": ("panic", "error", "warning", "info", "debug"),
}


def _json(text: str, path: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Denied(path, f"{what} must be valid JSON: {exc}") from None


def _check_capabilities(spec: dict[str, Any]) -> None:
    text = get_str(spec, "capabilities", "spec.capabilities")
    if not text:
        return
    _json(text, "spec.capabilities", "capabilities")  # the shape is a warning (networkproblems)


def _check_ipam(spec: dict[str, Any]) -> None:
    text = get_str(spec, "ipam", "spec.ipam")
    if not text:
        return
    # Upstream pastes it with all whitespace removed; that is what must parse. Its shape is a warning.
    _json("".join(text.split()), "spec.ipam", "ipam")


def _check_meta_plugins(spec: dict[str, Any]) -> None:
    text = get_str(spec, "metaPlugins", "spec.metaPlugins")
    if not text:
        return
    # The value is a comma-separated list of objects spliced into the rendered `plugins` array.
    # The shape of each plugin is a warning (networkproblems); only JSON that breaks the list is denied.
    _json(f"[{text}]", "spec.metaPlugins", "metaPlugins (one or more comma-separated plugin objects)")


def _stays_a_json_string(value: str, path: str, what: str) -> None:
    """Upstream pastes the value between quotes unescaped: deny a value that ends that JSON string early
    (the NAD would be invalid, or carry keys the user never wrote as such)."""
    try:
        ok = isinstance(json.loads(f'"{value}"'), str)
    except ValueError:
        ok = False
    if not ok:
        raise Denied(path, f"{what} must not contain a double quote (or a backslash that is not a JSON escape): "
                           "it is pasted into a JSON string of the CNI config unescaped")


def _check_sriov_fields(spec: dict[str, Any]) -> None:
    vlan = get_int(spec, "vlan", "spec.vlan")
    if not 0 <= vlan <= 4094:
        raise Denied("spec.vlan", f"vlan {vlan} is out of range 0..4094")
    qos = get_int(spec, "vlanQoS", "spec.vlanQoS")
    if not 0 <= qos <= 7:
        raise Denied("spec.vlanQoS", f"vlanQoS {qos} is out of range 0..7")
    for key, allowed in _ENUMS.items():
        value = get_str(spec, key, f"spec.{key}")
        if value and value not in allowed:
            raise Denied(f"spec.{key}", f"unsupported value {value!r}: must be one of {', '.join(allowed)}")
    for key in ("minTxRate", "maxTxRate"):
        if get_int(spec, key, f"spec.{key}") < 0:
            raise Denied(f"spec.{key}", f"{key} must not be negative")
    log_file = get_str(spec, "logFile", "spec.logFile")
    if log_file:
        _stays_a_json_string(log_file, "spec.logFile", "logFile")


def _check_ovs_fields(spec: dict[str, Any]) -> None:
    for key in ("bridge", "interfaceType"):
        value = get_str(spec, key, f"spec.{key}")
        if value:
            _stays_a_json_string(value, f"spec.{key}", key)
    vlan = get_int(spec, "vlan", "spec.vlan")
    if not 0 <= vlan <= 4095:
        raise Denied("spec.vlan", f"vlan {vlan} is out of range 0..4095")
    if get_int(spec, "mtu", "spec.mtu") < 0:
        raise Denied("spec.mtu", "mtu must not be negative")


def validate_network(request: AdmissionRequest, settings: WebhookSettings) -> Verdict:
    if request.operation == "DELETE":
        return Verdict.allow()
    obj = request.subject
    try:
        meta = get_map(obj, "metadata", "metadata")
        namespace = loose_str(meta.get("namespace")) or request.namespace
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            raise Denied("spec", "is required and must be an object")
        network_ns = get_str(spec, "networkNamespace", "spec.networkNamespace")
        if network_ns and namespace != settings.namespace:
            raise Denied(
                "spec.networkNamespace",
                f".Spec.NetworkNamespace field can't be specified if the resource is not in the "
                f"{settings.namespace} namespace (the NAD is created in the network's own namespace, {namespace})",
            )
        get_str(spec, "resourceName", "spec.resourceName")
        _check_capabilities(spec)
        _check_ipam(spec)
        _check_meta_plugins(spec)
        if request.kind == "SriovNetwork":
            _check_sriov_fields(spec)
        elif request.kind == "SriovIBNetwork":
            link_state = get_str(spec, "linkState", "spec.linkState")
            if link_state and link_state not in _ENUMS["linkState"]:
                raise Denied("spec.linkState", f"unsupported value {link_state!r}: must be auto, enable or disable")
        elif request.kind == "OVSNetwork":
            _check_ovs_fields(spec)
    except Denied as denied:
        return Verdict.deny(request, denied)
    return Verdict.allow(warnings=network_spec_problems(spec, request.kind))
