"""Operator config, pool config and network rules, and policy defaulting."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from sriovop.api.v1.kinds import NETWORK_KINDS
from sriovop.api.v1.policydefaults import policy_defaults_patch
from sriovop.render.nad import RenderError, render_nad
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.handler import MUTATING_PATH, VALIDATING_PATH, AdmissionHandler
from test.support.webhook_objects import API, NICS, OPERATOR_NS, SETTINGS, node, node_state, policy, review


def call(path: str, body: dict[str, Any], view: StaticClusterView | None = None) -> dict[str, Any]:
    status, answer = AdmissionHandler(view or StaticClusterView(nics=NICS), SETTINGS).handle(
        path, json.dumps(body).encode())
    assert status == 200, answer
    return answer["response"]


def obj(kind: str, name: str, spec: dict[str, Any], namespace: str = OPERATOR_NS) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def denied(response: dict[str, Any], field: str, fragment: str) -> None:
    assert response["allowed"] is False, response
    assert f": {field}: " in response["status"]["message"], response
    assert fragment in response["status"]["message"], response


# --- SriovOperatorConfig -------------------------------------------------------------------------

def test_operator_config_must_be_default_in_operator_namespace() -> None:
    denied(call(VALIDATING_PATH, review("SriovOperatorConfig", obj("SriovOperatorConfig", "other", {}))),
           "metadata.name", f"only default SriovOperatorConfig in {OPERATOR_NS} namespace is used")
    denied(call(VALIDATING_PATH, review("SriovOperatorConfig", obj("SriovOperatorConfig", "default", {}, "x"))),
           "metadata.name", "only default SriovOperatorConfig")
    assert call(VALIDATING_PATH, review("SriovOperatorConfig", obj("SriovOperatorConfig", "default", {})))["allowed"]


def test_disable_drain_warns_and_is_refused_while_a_node_updates() -> None:
    before = obj("SriovOperatorConfig", "default", {"disableDrain": False})
    after = obj("SriovOperatorConfig", "default", {"disableDrain": True})
    busy = StaticClusterView([node("w")], [node_state("w", [], sync="InProgress")], nics=NICS)
    calm = StaticClusterView([node("w")], [node_state("w", [], sync="Succeeded")], nics=NICS)
    response = call(VALIDATING_PATH, review("SriovOperatorConfig", after, "UPDATE", old=before), busy)
    denied(response, "spec.disableDrain", "can't set Spec.DisableDrain = true while node[w] is updating")
    assert response["warnings"] == [
        "Node draining is disabled for applying SriovNetworkNodePolicy, it may result in workload interruption."]
    ok = call(VALIDATING_PATH, review("SriovOperatorConfig", after, "UPDATE", old=before), calm)
    assert ok["allowed"] is True and len(ok["warnings"]) == 1
    unchanged = call(VALIDATING_PATH, review("SriovOperatorConfig", after, "UPDATE", old=after), busy)
    assert unchanged["allowed"] is True


@pytest.mark.parametrize(("spec", "field", "fragment"), [
    ({"logLevel": 3}, "spec.logLevel", "out of range 0..2"),
    ({"configurationMode": "cron"}, "spec.configurationMode", "unsupported value 'cron'"),
    ({"disablePlugins": ["intel"]}, "spec.disablePlugins[0]", "only 'mellanox'"),
    ({"enableInjector": "yes"}, "spec.enableInjector", "must be a boolean"),
])
def test_operator_config_fields(spec: dict[str, Any], field: str, fragment: str) -> None:
    denied(call(VALIDATING_PATH, review("SriovOperatorConfig", obj("SriovOperatorConfig", "default", spec))),
           field, fragment)


# --- SriovNetworkPoolConfig ----------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "field", "fragment"), [
    ({"maxUnavailable": 1, "ovsHardwareOffloadConfig": {"name": "mcp"}}, "spec.ovsHardwareOffloadConfig",
     "can't have both parallel configuration"),
    ({"nodeSelector": {}, "ovsHardwareOffloadConfig": {"name": "mcp"}}, "spec.ovsHardwareOffloadConfig",
     "can't have both"),
    ({"maxUnavailable": -1}, "spec.maxUnavailable", "negative numbers are not allowed"),
    ({"maxUnavailable": "10"}, "spec.maxUnavailable", "must be a percentage"),
    ({"maxUnavailable": "0%"}, "spec.maxUnavailable", "between 1% and 100%"),
    ({"maxUnavailable": "101%"}, "spec.maxUnavailable", "between 1% and 100%"),
    ({"maxUnavailable": "1.5%"}, "spec.maxUnavailable", "is not an integer percentage"),
    ({"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}},
     "spec.nodeSelector.matchExpressions[0].operator", "unsupported operator 'Has'"),
    ({"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "spec.nodeSelector.matchExpressions[0].values", "non-empty"),
    ({"rdmaMode": "private"}, "spec.rdmaMode", "unsupported value 'private'"),
])
def test_pool_config_denials(spec: dict[str, Any], field: str, fragment: str) -> None:
    denied(call(VALIDATING_PATH, review("SriovNetworkPoolConfig", obj("SriovNetworkPoolConfig", "pool", spec))),
           field, fragment)


@pytest.mark.parametrize("spec", [
    {}, {"maxUnavailable": 0}, {"maxUnavailable": 3}, {"maxUnavailable": "25%"}, {"maxUnavailable": "100%"},
    {"ovsHardwareOffloadConfig": {"name": "mcp"}}, {"rdmaMode": "exclusive"},
    {"nodeSelector": {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]}},
])
def test_pool_config_allowed(spec: dict[str, Any]) -> None:
    response = call(VALIDATING_PATH, review("SriovNetworkPoolConfig", obj("SriovNetworkPoolConfig", "pool", spec)))
    assert response["allowed"] is True, response


# --- networks ------------------------------------------------------------------------------------

NET_DENIALS = [
    ("SriovNetwork", "user-ns", {"resourceName": "x", "networkNamespace": "other"}, "spec.networkNamespace",
     "can't be specified if the resource is not in the sriov-network-operator namespace"),
    ("SriovIBNetwork", "user-ns", {"resourceName": "x", "networkNamespace": "other"}, "spec.networkNamespace",
     "can't be specified"),
    ("OVSNetwork", "user-ns", {"resourceName": "x", "networkNamespace": "other"}, "spec.networkNamespace",
     "can't be specified"),
    # A wrong type: the CRD schema refuses it too.
    ("SriovIBNetwork", OPERATOR_NS, {"resourceName": "x", "capabilities": {"infinibandGUID": True}},
     "spec.capabilities", "must be a string"),
    ("OVSNetwork", OPERATOR_NS, {"resourceName": "x", "bridge": 1}, "spec.bridge", "must be a string"),
    # The CRD schema (upstream's and ours) refuses these before the webhook runs.
    ("SriovNetwork", OPERATOR_NS, {"resourceName": "x", "vlan": 4095}, "spec.vlan", "out of range 0..4094"),
    ("SriovNetwork", OPERATOR_NS, {"resourceName": "x", "vlanQoS": 8}, "spec.vlanQoS", "out of range 0..7"),
    ("SriovNetwork", OPERATOR_NS, {"resourceName": "x", "spoofChk": "yes"}, "spec.spoofChk", "unsupported value"),
    ("SriovIBNetwork", OPERATOR_NS, {"resourceName": "x", "linkState": "up"}, "spec.linkState",
     "unsupported value 'up'"),
    ("OVSNetwork", OPERATOR_NS, {"resourceName": "x", "vlan": 5000}, "spec.vlan", "out of range 0..4095"),
]


@pytest.mark.parametrize(("kind", "ns", "spec", "field", "fragment"), NET_DENIALS,
                         ids=[f"{r[0]}-{r[3]}" for r in NET_DENIALS])
def test_network_denials(kind: str, ns: str, spec: dict[str, Any], field: str, fragment: str) -> None:
    response = call(VALIDATING_PATH, review(kind, obj(kind, "net", spec, ns)))
    denied(response, field, fragment)
    assert f'{kind} "{ns}/net" is invalid' in response["status"]["message"]


@pytest.mark.parametrize(("kind", "ns", "spec"), [
    ("SriovNetwork", OPERATOR_NS, {"resourceName": "x", "networkNamespace": "apps", "vlan": 100,
                                   "ipam": '{"type": "host-local", "subnet": "10.56.217.0/24"}',
                                   "capabilities": '{"mac": true, "ips": true}', "spoofChk": "on",
                                   "metaPlugins": '{"type": "tuning", "sysctl": {}}, {"type": "vrf"}'}),
    ("SriovNetwork", "user-ns", {"resourceName": "x", "ipam": "{}"}),
    ("SriovIBNetwork", OPERATOR_NS, {"resourceName": "x", "capabilities": '{"infinibandGUID": true}'}),
    ("OVSNetwork", "user-ns", {"resourceName": "x", "bridge": "br-0000_00_03.0", "interfaceType": "netdev"}),
])
def test_networks_allowed(kind: str, ns: str, spec: dict[str, Any]) -> None:
    response = call(VALIDATING_PATH, review(kind, obj(kind, "net", spec, ns)))
    assert response["allowed"] is True
    assert "warnings" not in response


NET_WARNINGS = [
    # Upstream admits these (its webhook checks only networkNamespace): admitted, with a warning.
    ("SriovNetwork", {"resourceName": ""}, ["spec.resourceName: is empty"]),
    ("SriovIBNetwork", {"resourceName": "  "}, ["spec.resourceName: is empty"]),
    ("SriovNetwork", {"resourceName": "x", "capabilities": '{"mac": "yes"}'}, ["spec.capabilities: should be"]),
    ("OVSNetwork", {"resourceName": "x", "capabilities": '["mac"]'}, ["spec.capabilities: should be"]),
    ("SriovNetwork", {"resourceName": "", "capabilities": "true"},
     ["spec.resourceName: is empty", "spec.capabilities: should be"]),
    # Upstream renders these (valid JSON) and says Ready=True; we used to deny them.
    ("SriovNetwork", {"resourceName": "x", "ipam": '{"subnet": "10.0.0.0/24"}'}, ['spec.ipam: has no non-empty']),
    ("SriovNetwork", {"resourceName": "x", "ipam": '"dhcp"'}, ["spec.ipam: should be a JSON object"]),
    ("SriovNetwork", {"resourceName": "x", "metaPlugins": '{"type": "tuning"}, {"sysctl": {}}'},
     ['spec.metaPlugins: element 1 has no non-empty string "type"']),
    ("SriovIBNetwork", {"resourceName": "x", "metaPlugins": "1"}, ["spec.metaPlugins: element 0 should be"]),
    ("SriovNetwork", {"resourceName": "x", "logFile": "C:\\temp"}, ["spec.logFile: contains a backslash"]),
    ("OVSNetwork", {"resourceName": "x", "bridge": "a-very-long-bridge-name"}, ["spec.bridge: is not a valid"]),
    ("OVSNetwork", {"resourceName": "x", "bridge": "-br"}, ["spec.bridge: is not a valid"]),
    ("OVSNetwork", {"resourceName": "x", "interfaceType": "dpdk vhost"}, ["spec.interfaceType: is not an OVS"]),
    ("OVSNetwork", {"resourceName": "x", "mtu": 70000}, ["spec.mtu: 70000 is above 65535"]),
]
NET_UNRENDERABLE = [
    # Upstream admits these and then fails to render them (or renders keys never written as such):
    # admitted with a warning; the controller renders no NAD and says so on Ready=False.
    ("SriovIBNetwork", {"resourceName": "x", "capabilities": "infinibandGUID"},
     ["spec.capabilities: is not valid JSON"]),
    ("SriovNetwork", {"resourceName": "x", "capabilities": '{"mac": tru'}, ["spec.capabilities: is not valid JSON"]),
    ("OVSNetwork", {"resourceName": "x", "capabilities": "{mac: true}"}, ["spec.capabilities: is not valid JSON"]),
    ("SriovNetwork", {"resourceName": "x", "ipam": "{not json"}, ["spec.ipam: is not valid JSON"]),
    ("SriovNetwork", {"resourceName": "x", "metaPlugins": '{"type": "tuning"'},
     ["spec.metaPlugins: is not one or more comma-separated JSON objects"]),
    ("SriovNetwork", {"resourceName": "x", "logFile": '/tmp/a"b'}, ["spec.logFile: contains a double quote"]),
    ("SriovNetwork", {"resourceName": "x", "logFile": '/tmp/a","x":"y'}, ["spec.logFile: contains a double quote"]),
    ("SriovNetwork", {"resourceName": "x", "logFile": "C:\\x"}, ["spec.logFile: contains a double quote"]),
    ("OVSNetwork", {"resourceName": "x", "bridge": 'br"0'},
     ["spec.bridge: contains a double quote", "spec.bridge: is not a valid OVS bridge name"]),
    ("SriovNetwork", {"resourceName": "", "ipam": "{"},
     ["spec.ipam: is not valid JSON", "spec.resourceName: is empty"]),
]


@pytest.mark.parametrize(("kind", "spec", "fragments"), NET_WARNINGS + NET_UNRENDERABLE,
                         ids=[str(i) for i in range(len(NET_WARNINGS + NET_UNRENDERABLE))])
def test_networks_upstream_admits_are_allowed_with_warnings(kind: str, spec: dict[str, Any],
                                                           fragments: list[str]) -> None:
    response = call(VALIDATING_PATH, review(kind, obj(kind, "net", spec, OPERATOR_NS)))
    assert response["allowed"] is True, response
    warnings = response.get("warnings") or []
    assert len(warnings) == len(fragments), warnings
    for warning, fragment in zip(warnings, fragments, strict=True):
        assert warning.startswith(fragment), warnings


# --- defaulting ----------------------------------------------------------------------------------

def _patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["allowed"] is True
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    patch: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return patch


def _bare(**spec: Any) -> dict[str, Any]:
    p = policy(**spec)
    del p["spec"]["priority"], p["spec"]["isRdma"]
    p["spec"].update(spec)
    return p


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, [{"op": "add", "path": "/spec/priority", "value": 99}, {"op": "add", "path": "/spec/isRdma", "value": False}]),
    ({"priority": 10}, [{"op": "add", "path": "/spec/isRdma", "value": False}]),
    ({"priority": 0, "isRdma": True}, []),
    ({"priority": 5, "linkType": "IB"}, [{"op": "add", "path": "/spec/isRdma", "value": True}]),
    ({"priority": 5, "linkType": "ib", "isRdma": False}, [{"op": "add", "path": "/spec/isRdma", "value": True}]),
    ({"priority": 5, "linkType": "ib", "deviceType": "vfio-pci"}, [{"op": "add", "path": "/spec/isRdma",
                                                                     "value": False}]),
])
def test_policy_defaults(spec: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert _patch(call(MUTATING_PATH, review("SriovNetworkNodePolicy", _bare(**spec)))) == expected


def test_defaults_skip_the_default_policy_and_other_kinds() -> None:
    assert policy_defaults_patch(_bare() | {"metadata": {"name": "default"}}) == []
    assert _patch(call(MUTATING_PATH, review("SriovNetwork", obj("SriovNetwork", "n", {})))) == []
    assert policy_defaults_patch({"spec": "nonsense"}) == []


def test_pool_config_rdma_mode_warns_that_nodes_may_reboot() -> None:
    pool = obj("SriovNetworkPoolConfig", "pool", {"rdmaMode": "exclusive"})
    response = call(VALIDATING_PATH, review("SriovNetworkPoolConfig", pool))
    assert response["allowed"] is True
    (warning,) = response["warnings"]
    assert warning.startswith("rdmaMode exclusive: ") and "ib_core.netns_mode=0" in warning
    assert "rebooted" in warning
    # An update that keeps the mode says nothing new.
    same = call(VALIDATING_PATH, review("SriovNetworkPoolConfig", pool, operation="UPDATE", old=pool))
    assert same["allowed"] is True and "warnings" not in same


@pytest.mark.parametrize(("kind", "spec", "fragments"), NET_WARNINGS, ids=[str(i) for i in range(len(NET_WARNINGS))])
def test_every_warned_network_renders_like_upstream(kind: str, spec: dict[str, Any], fragments: list[str]) -> None:
    """A warning, never a denial, is only right where upstream's template gives a valid NAD: ours must too."""
    network_kind = next(k for k in NETWORK_KINDS if k.kind == kind)
    nad = render_nad(network_kind, obj(kind, "net", spec, OPERATOR_NS), "openshift.io")
    assert json.loads(nad["spec"]["config"])["name"] == "net"


@pytest.mark.parametrize(("kind", "spec", "fragments"), NET_UNRENDERABLE,
                         ids=[str(i) for i in range(len(NET_UNRENDERABLE))])
def test_unrenderable_networks_warn_with_the_renderers_reason(kind: str, spec: dict[str, Any],
                                                              fragments: list[str]) -> None:
    """The admission warning and the controller's Ready=False message are the same text."""
    network_kind = next(k for k in NETWORK_KINDS if k.kind == kind)
    with pytest.raises(RenderError) as info:
        render_nad(network_kind, obj(kind, "net", spec, OPERATOR_NS), "openshift.io")
    warnings = call(VALIDATING_PATH, review(kind, obj(kind, "net", spec, OPERATOR_NS)))["warnings"]
    assert str(info.value).startswith(fragments[0]), info.value
    assert str(info.value) in warnings, (info.value, warnings)
