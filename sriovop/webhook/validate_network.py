"""SriovNetwork, SriovIBNetwork and OVSNetwork validation.

The rule: what upstream admits is admitted here too, even where upstream then fails to render it into a
NetworkAttachmentDefinition. Where we see a problem upstream does not, the object is admitted with an
admission warning, and the controller reports the same text on a separate `SpecWarning` condition
(`sriovop.api.v1.networkproblems`). docs/networks-vs-upstream.md lists every case.

That includes values the controller cannot render correctly: raw-JSON fields (`capabilities`, `ipam`,
`metaPlugins`) that do not parse, and `logFile`, `bridge` or `interfaceType` with a quote or a bad
backslash that would break out of the CNI config's JSON string. Upstream admits these (and then fails to
render them), so they are admitted with a warning too; the controller renders no NAD for them and says
why on Ready=False (`sriovop.api.v1.unrenderable`).

Denied, besides upstream's one rule (`networkNamespace` only in the operator namespace): wrong types,
out-of-range numbers and unknown enum values. The CRD schema (upstream's too) rejects these before any
webhook runs; the checks here only matter when the webhook is called on its own.
"""

from __future__ import annotations

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


def _check_strings(spec: dict[str, Any], fields: tuple[str, ...]) -> None:
    """Only the type: what a string holds is at worst a warning (`networkproblems`)."""
    for field in fields:
        get_str(spec, field, f"spec.{field}")


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
    _check_strings(spec, ("logFile",))


def _check_ovs_fields(spec: dict[str, Any]) -> None:
    _check_strings(spec, ("bridge", "interfaceType"))
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
        _check_strings(spec, ("resourceName", "capabilities", "ipam", "metaPlugins"))
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
