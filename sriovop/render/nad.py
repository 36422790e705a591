"""NetworkAttachmentDefinitions for SriovNetwork, SriovIBNetwork and OVSNetwork, as upstream renders them.

Upstream builds `spec.config` with a Go text/template (values pasted in unescaped, raw JSON strings such
as `capabilities` and `metaPlugins` pasted verbatim, `ipam` with *all* whitespace removed, even inside
its strings) and then re-indents it with `json.Indent(…, "", "    ")`. Users diff these strings and
tools compare them, so we reproduce that exactly: the same key order, the same conditional keys, the
same quirks. Where upstream's paste would produce invalid JSON, or JSON with keys the user never wrote as
such (a raw-JSON field that does not parse on its own, a quote in `logFile`), rendering fails with a
RenderError naming the field (`sriovop.api.v1.unrenderable`) instead.

Key order of the CNI config (before indenting):
- `cniVersion`, `name`; with metaPlugins a `plugins` list opens here, the main plugin first;
- `type` (`sriov` / `ib-sriov` / `ovs`);
- sriov only: `vlan` (always), `spoofchk`, `trust` (on/off only), `vlanQoS` (when 0..7, so in practice
  always), `vlanProto`, `min_tx_rate`, `max_tx_rate` (when set, 0 included);
- sriov and IB: `capabilities`, `link_state`; sriov only: `logLevel`, `logFile` (when non-empty);
- ovs: `capabilities`, `bridge`, `vlan`, `mtu`, `trunk`, `interface_type` (each when non-zero/non-empty);
- `ipam` last (`{}` when unset); then the metaPlugins objects close the `plugins` list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    NETWORK_ATTACHMENT_DEFINITION,
    OVS_NETWORK,
    SRIOV_IB_NETWORK,
    SRIOV_NETWORK,
)
from sriovop.api.v1.unrenderable import unrenderable_fields
from sriovop.render.jsonindent import go_indent
from sriovop.runtime.kinds import Kind

_ON_OFF = ("on", "off")
_LINK_STATES = ("enable", "disable", "auto")


class RenderError(ValueError):
    """A network spec that cannot be rendered into a valid CNI config; the message names the field."""


def target_namespace(network: Mapping[str, Any]) -> str:
    """Where the NAD lives: `spec.networkNamespace`, else the network's own namespace."""
    spec = network.get("spec") or {}
    return str(spec.get("networkNamespace") or network["metadata"].get("namespace") or "")


def owner_ref_annotation(kind: Kind, network: Mapping[str, Any]) -> str:
    """`<Kind>.<group>/<namespace>/<name>`, e.g. `SriovNetwork.sriovnetwork.openshift.io/ns/test`."""
    meta = network["metadata"]
    return f"{kind.kind}.{kind.group}/{meta.get('namespace', '')}/{meta['name']}"


def _ipam(spec: Mapping[str, Any]) -> str:
    raw = spec.get("ipam") or ""
    if not raw:
        return '"ipam":{}'
    return '"ipam":' + "".join(str(raw).split())


def _int(spec: Mapping[str, Any], field: str, kind: Kind) -> int:
    value = spec.get(field, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise RenderError(f"{kind.kind} spec.{field}: must be an integer, got {value!r}")
    return value


def _sriov_body(spec: Mapping[str, Any]) -> list[str]:
    k = SRIOV_NETWORK
    parts = [f'"vlan":{_int(spec, "vlan", k)}']
    if spec.get("spoofChk") in _ON_OFF:
        parts.append(f'"spoofchk":"{spec["spoofChk"]}"')
    if spec.get("trust") in _ON_OFF:
        parts.append(f'"trust":"{spec["trust"]}"')
    qos = _int(spec, "vlanQoS", k)
    if 0 <= qos <= 7:
        parts.append(f'"vlanQoS":{qos}')
    if spec.get("vlanProto"):
        parts.append(f'"vlanProto":"{spec["vlanProto"]}"')
    for field, key in (("minTxRate", "min_tx_rate"), ("maxTxRate", "max_tx_rate")):
        if spec.get(field) is not None:
            value = _int(spec, field, k)
            if value < 0:
                raise RenderError(f"SriovNetwork spec.{field}: must be greater or equal to 0, got {value}")
            parts.append(f'"{key}":{value}')
    return parts


def _capabilities(spec: Mapping[str, Any]) -> list[str]:
    caps = spec.get("capabilities") or ""
    return [f'"capabilities":{caps}'] if caps else []


def _link_state(spec: Mapping[str, Any]) -> list[str]:
    state = spec.get("linkState")
    return [f'"link_state":"{state}"'] if state in _LINK_STATES else []


def _trunk_json(trunk: Any) -> str:
    """Go's json.Marshal of []*TrunkConfig: fields minID, maxID, id, each omitted when nil."""
    items = []
    for entry in trunk or []:
        if entry is None:
            items.append("null")
            continue
        fields = [f'"{k}":{int(entry[k])}' for k in ("minID", "maxID", "id") if entry.get(k) is not None]
        items.append("{" + ",".join(fields) + "}")
    return "[" + ",".join(items) + "]"


def _ovs_body(spec: Mapping[str, Any]) -> list[str]:
    parts = _capabilities(spec)
    if spec.get("bridge"):
        parts.append(f'"bridge":"{spec["bridge"]}"')
    if _int(spec, "vlan", OVS_NETWORK):
        parts.append(f'"vlan":{spec["vlan"]}')
    if _int(spec, "mtu", OVS_NETWORK):
        parts.append(f'"mtu":{spec["mtu"]}')
    if spec.get("trunk"):
        parts.append(f'"trunk":{_trunk_json(spec["trunk"])}')
    if spec.get("interfaceType"):
        parts.append(f'"interface_type":"{spec["interfaceType"]}"')
    return parts


def raw_cni_config(kind: Kind, network: Mapping[str, Any]) -> str:
    """The config string as upstream's template produces it, before re-indenting."""
    spec = network.get("spec") or {}
    name = network["metadata"]["name"]
    meta_plugins = spec.get("metaPlugins") or ""
    body: list[str]
    if kind == SRIOV_NETWORK:
        cni_type = consts.CNI_TYPE_SRIOV
        body = _sriov_body(spec) + _capabilities(spec) + _link_state(spec)
        if spec.get("logLevel"):
            body.append(f'"logLevel":"{spec["logLevel"]}"')
        if spec.get("logFile"):
            body.append(f'"logFile":"{spec["logFile"]}"')
    elif kind == SRIOV_IB_NETWORK:
        cni_type = consts.CNI_TYPE_IB_SRIOV
        body = _capabilities(spec) + _link_state(spec)
    elif kind == OVS_NETWORK:
        cni_type = consts.CNI_TYPE_OVS
        body = _ovs_body(spec)
    else:
        raise RenderError(f"{kind.kind} does not render a NetworkAttachmentDefinition")
    plugin = ",".join([f'"type":"{cni_type}"', *body, _ipam(spec)])
    head = f'{{ "cniVersion":"{consts.CNI_VERSION}", "name":"{name}",'
    if meta_plugins:
        return f'{head}"plugins": [ {{{plugin}}},{meta_plugins}]}}'
    return f"{head}{plugin}}}"


def cni_config(kind: Kind, network: Mapping[str, Any]) -> str:
    """The 4-space indented `spec.config` string stored in the NAD."""
    unrenderable = unrenderable_fields(network.get("spec") or {}, kind.kind)
    if unrenderable:
        raise RenderError("; ".join(unrenderable))
    raw = raw_cni_config(kind, network)
    try:
        return go_indent(raw, "", "    ")
    except ValueError as exc:
        meta = network["metadata"]
        raise RenderError(
            f"{kind.kind} {meta.get('namespace', '')}/{meta['name']}: the rendered CNI config is not valid "
            f"JSON (check spec.capabilities, spec.ipam and spec.metaPlugins): {exc}"
        ) from None


def owner_reference(kind: Kind, network: Mapping[str, Any]) -> dict[str, Any]:
    meta = network["metadata"]
    return {
        "apiVersion": kind.api_version, "kind": kind.kind, "name": meta["name"], "uid": meta.get("uid", ""),
        "controller": True, "blockOwnerDeletion": True,
    }


def render_nad(kind: Kind, network: Mapping[str, Any], resource_prefix: str) -> dict[str, Any]:
    """The desired NAD for a network CR; an ownerReference is set only when both share a namespace
    (a cross-namespace ownerReference is invalid, so those NADs rely on the CR's finalizer instead)."""
    meta = network["metadata"]
    spec = network.get("spec") or {}
    ns = target_namespace(network)
    nad_meta: dict[str, Any] = {
        "name": meta["name"],
        "namespace": ns,
        "annotations": {
            consts.NAD_RESOURCE_NAME_ANNOTATION: f"{resource_prefix}/{spec.get('resourceName', '')}",
            consts.OWNER_REF_ANNOTATION: owner_ref_annotation(kind, network),
        },
    }
    if ns == meta.get("namespace") and meta.get("uid"):
        nad_meta["ownerReferences"] = [owner_reference(kind, network)]
    return {
        "apiVersion": NETWORK_ATTACHMENT_DEFINITION.api_version,
        "kind": NETWORK_ATTACHMENT_DEFINITION.kind,
        "metadata": nad_meta,
        "spec": {"config": cni_config(kind, network)},
    }
