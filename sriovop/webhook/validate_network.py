"""SriovNetwork, SriovIBNetwork and OVSNetwork validation.

The raw-JSON fields are pasted into the NetworkAttachmentDefinition's CNI config, so a value that is
not JSON at all would produce a NAD that every pod fails on much later; it is rejected here, at the
moment the user can still see why. What upstream admits and can still render (an empty
`resourceName`, `capabilities` that are not an object of booleans) is admitted with a warning and
reported on the network's Ready condition (`sriovop.api.v1.networkproblems`), so existing YAML keeps
applying.

Stricter than upstream (whose webhook checks only `networkNamespace`): JSON that does not parse in
`capabilities`, `ipam` or `metaPlugins`, an `ipam` without a `type`, metaPlugins without a `type`,
quotes in string fields pasted into the JSON, and out-of-range or unknown enum values the CRD schema
would also refuse. Each of those can only ever give a NAD that fails every pod.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sriovop.api.v1.networkproblems import network_spec_problems
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.fields import get_int, get_map, get_str, loose_str
from sriovop.webhook.settings import WebhookSettings

_BRIDGE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*$")
_INTERFACE_TYPE = re.compile(r"^[a-zA-Z0-9_-]+$")
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
    ipam = _json(text, "spec.ipam", "ipam")
    if not isinstance(ipam, dict):
        raise Denied("spec.ipam", "ipam must be a JSON object")
    if ipam and (not isinstance(ipam.get("type"), str) or not ipam["type"].strip()):
        raise Denied("spec.ipam", 'ipam must contain a non-empty string "type" field (or be {})')


def _check_meta_plugins(spec: dict[str, Any]) -> None:
    text = get_str(spec, "metaPlugins", "spec.metaPlugins")
    if not text:
        return
    # The value is a comma-separated list of objects spliced into the rendered `plugins` array.
    plugins = _json(f"[{text}]", "spec.metaPlugins", "metaPlugins (one or more comma-separated plugin objects)")
    if not plugins:
        raise Denied("spec.metaPlugins", "metaPlugins must contain at least one plugin object")
    for i, plugin in enumerate(plugins):
        if not isinstance(plugin, dict):
            raise Denied("spec.metaPlugins", f"metaPlugins[{i}] must be a JSON object")
        kind = plugin.get("type")
        if not isinstance(kind, str) or not kind.strip():
            raise Denied("spec.metaPlugins", f'metaPlugins[{i}] must contain a non-empty string "type" field')


def _no_json_specials(value: str, path: str, what: str) -> None:
    if '"' in value or "\\" in value:
        raise Denied(path, f"{what} must not contain quotes or backslashes")


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
        _no_json_specials(log_file, "spec.logFile", "logFile")


def _check_ovs_fields(spec: dict[str, Any]) -> None:
    bridge = get_str(spec, "bridge", "spec.bridge")
    if bridge:
        _no_json_specials(bridge, "spec.bridge", "bridge")
        if len(bridge) > 15:
            raise Denied("spec.bridge", f"bridge name {bridge!r} must be at most 15 characters")
        if not _BRIDGE.match(bridge):
            raise Denied(
                "spec.bridge",
                "bridge name must start with an alphanumeric character and contain only alphanumeric "
                "characters, dots, underscores, or dashes",
            )
    itype = get_str(spec, "interfaceType", "spec.interfaceType")
    if itype:
        _no_json_specials(itype, "spec.interfaceType", "interfaceType")
        if len(itype) > 32 or not _INTERFACE_TYPE.match(itype):
            raise Denied(
                "spec.interfaceType",
                "interfaceType must be at most 32 characters of letters, digits, underscores or dashes",
            )
    for key, top in (("vlan", 4095), ("mtu", 65535)):
        value = get_int(spec, key, f"spec.{key}")
        if not 0 <= value <= top:
            raise Denied(f"spec.{key}", f"{key} {value} is out of range 0..{top}")


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
    return Verdict.allow(warnings=network_spec_problems(spec))
