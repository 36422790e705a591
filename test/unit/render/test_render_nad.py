"""Golden tests of NAD rendering: each network kind and each optional field.

A golden file holds the NAD metadata (JSON) then `---` then `spec.config` exactly as stored. Regenerate
after an intended change with `SRIOVOP_UPDATE_GOLDEN=1 pytest test/unit/render` and review the diff
against the upstream template order documented in sriovop/render/nad.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import OVS_NETWORK, SRIOV_IB_NETWORK, SRIOV_NETWORK
from sriovop.render.nad import RenderError, cni_config, raw_cni_config, render_nad
from sriovop.runtime.kinds import Kind

GOLDEN = Path(__file__).parent / "golden" / "nad"
OPERATOR_NS = "sriov-network-operator"
PREFIX = "openshift.io"


def network(kind: Kind, spec: dict[str, Any], name: str = "test", namespace: str = OPERATOR_NS) -> dict[str, Any]:
    return {"apiVersion": kind.api_version, "kind": kind.kind,
            "metadata": {"name": name, "namespace": namespace, "uid": "0b5c1f6e-uid"},
            "spec": {"resourceName": "res", **spec}}


CASES: dict[str, tuple[Kind, dict[str, Any]]] = {
    "sriov-minimal": (SRIOV_NETWORK, {}),
    "sriov-crd-default-loglevel": (SRIOV_NETWORK, {"logLevel": "info"}),
    "sriov-vlan": (SRIOV_NETWORK, {"vlan": 100, "vlanQoS": 5}),
    "sriov-vlanproto": (SRIOV_NETWORK, {"vlan": 10, "vlanProto": "802.1ad"}),
    "sriov-spoofchk-trust": (SRIOV_NETWORK, {"spoofChk": "on", "trust": "off"}),
    "sriov-spoofchk-invalid-ignored": (SRIOV_NETWORK, {"spoofChk": "yes", "trust": "maybe"}),
    "sriov-linkstate-enable": (SRIOV_NETWORK, {"linkState": "enable"}),
    "sriov-linkstate-auto": (SRIOV_NETWORK, {"linkState": "auto"}),
    "sriov-txrates": (SRIOV_NETWORK, {"minTxRate": 0, "maxTxRate": 1000}),
    "sriov-capabilities": (SRIOV_NETWORK, {"capabilities": '{ "mac": true, "ips": true }'}),
    "sriov-ipam": (SRIOV_NETWORK, {"ipam": '{\n  "type": "host-local",\n  "subnet": "10.56.217.0/24",\n'
                                           '  "routes": [{"dst": "0.0.0.0/0"}],\n  "note": "a b"\n}'}),
    "sriov-metaplugins": (SRIOV_NETWORK, {
        "metaPlugins": '{ "type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.accept_redirects": "1"}}'}),
    "sriov-metaplugins-two": (SRIOV_NETWORK, {"metaPlugins": '{"type":"tuning"},{"type":"vrf","vrfname":"blue"}',
                                              "ipam": '{"type":"static"}'}),
    "sriov-logging": (SRIOV_NETWORK, {"logLevel": "debug", "logFile": "/tmp/sriov.log"}),
    "sriov-other-namespace": (SRIOV_NETWORK, {"networkNamespace": "tenant-a"}),
    "sriov-all-fields": (SRIOV_NETWORK, {
        "networkNamespace": "tenant-a", "vlan": 4094, "vlanQoS": 7, "vlanProto": "802.1Q", "spoofChk": "off",
        "trust": "on", "linkState": "disable", "minTxRate": 10, "maxTxRate": 200, "capabilities": '{"mac":true}',
        "ipam": '{"type":"dhcp"}', "metaPlugins": '{"type":"tuning"}', "logLevel": "error", "logFile": "/var/log/x"}),
    "ib-minimal": (SRIOV_IB_NETWORK, {}),
    "ib-capabilities": (SRIOV_IB_NETWORK, {"capabilities": '{"infinibandGUID": true}'}),
    "ib-linkstate": (SRIOV_IB_NETWORK, {"linkState": "enable"}),
    "ib-ipam-metaplugins": (SRIOV_IB_NETWORK, {"ipam": '{"type": "whereabouts", "range": "192.168.2.225/28"}',
                                               "metaPlugins": '{"type":"tuning"}'}),
    "ib-ignores-sriov-fields": (SRIOV_IB_NETWORK, {"vlan": 5, "logLevel": "info", "spoofChk": "on"}),
    "ovs-minimal": (OVS_NETWORK, {}),
    "ovs-bridge": (OVS_NETWORK, {"bridge": "br-sriov0"}),
    "ovs-vlan-mtu": (OVS_NETWORK, {"vlan": 100, "mtu": 9000}),
    "ovs-zero-vlan-mtu-omitted": (OVS_NETWORK, {"vlan": 0, "mtu": 0, "bridge": ""}),
    "ovs-trunk": (OVS_NETWORK, {"trunk": [{"minID": 100, "maxID": 200}, {"id": 300}, {"maxID": 5, "minID": 1}]}),
    "ovs-interface-type": (OVS_NETWORK, {"interfaceType": "netdev"}),
    "ovs-capabilities": (OVS_NETWORK, {"capabilities": '{"mac": true}'}),
    "ovs-all-fields": (OVS_NETWORK, {
        "networkNamespace": "tenant-b", "capabilities": '{"mac":true}', "bridge": "br0", "vlan": 12, "mtu": 1500,
        "trunk": [{"id": 1}], "interfaceType": "dpdk", "ipam": '{"type":"host-local"}',
        "metaPlugins": '{"type":"tuning"}'}),
}


def golden_text(nad: dict[str, Any]) -> str:
    return json.dumps(nad["metadata"], indent=2) + "\n---\n" + nad["spec"]["config"] + "\n"


@pytest.mark.parametrize("case", sorted(CASES))
def test_nad_matches_golden(case: str) -> None:
    kind, spec = CASES[case]
    nad = render_nad(kind, network(kind, spec), PREFIX)
    path = GOLDEN / f"{case}.golden"
    text = golden_text(nad)
    if os.environ.get("SRIOVOP_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{case}: rendering differs from {path}"
    assert nad["apiVersion"] == "k8s.cni.cncf.io/v1" and nad["kind"] == "NetworkAttachmentDefinition"
    json.loads(nad["spec"]["config"])  # always valid JSON


def test_minimal_sriov_config_is_upstreams_example() -> None:
    # The reference's example, before indenting.
    raw = raw_cni_config(SRIOV_NETWORK, network(SRIOV_NETWORK, {}))
    assert json.loads(raw) == {"cniVersion": "1.0.0", "name": "test", "type": "sriov", "vlan": 0, "vlanQoS": 0,
                               "ipam": {}}
    assert list(json.loads(raw)) == ["cniVersion", "name", "type", "vlan", "vlanQoS", "ipam"]


def test_sriov_key_order_with_every_field() -> None:
    kind, spec = CASES["sriov-all-fields"]
    config = json.loads(cni_config(kind, network(kind, spec)))
    assert list(config) == ["cniVersion", "name", "plugins"]
    assert list(config["plugins"][0]) == ["type", "vlan", "spoofchk", "trust", "vlanQoS", "vlanProto", "min_tx_rate",
                                          "max_tx_rate", "capabilities", "link_state", "logLevel", "logFile", "ipam"]
    assert config["plugins"][1] == {"type": "tuning"}


def test_ovs_key_order_with_every_field() -> None:
    kind, spec = CASES["ovs-all-fields"]
    config = json.loads(cni_config(kind, network(kind, spec)))
    assert list(config["plugins"][0]) == ["type", "capabilities", "bridge", "vlan", "mtu", "trunk",
                                          "interface_type", "ipam"]


def test_ipam_loses_all_whitespace_even_inside_strings() -> None:
    config = json.loads(cni_config(SRIOV_NETWORK, network(SRIOV_NETWORK, {"ipam": '{"type": "a b"}'})))
    assert config["ipam"] == {"type": "ab"}


def test_annotations_and_owner_reference() -> None:
    same = render_nad(SRIOV_NETWORK, network(SRIOV_NETWORK, {}, namespace="apps"), "example.com")
    assert same["metadata"]["namespace"] == "apps"
    assert same["metadata"]["annotations"] == {
        consts.NAD_RESOURCE_NAME_ANNOTATION: "example.com/res",
        consts.OWNER_REF_ANNOTATION: "SriovNetwork.sriovnetwork.openshift.io/apps/test",
    }
    assert same["metadata"]["ownerReferences"] == [{
        "apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork", "name": "test",
        "uid": "0b5c1f6e-uid", "controller": True, "blockOwnerDeletion": True}]
    moved = render_nad(OVS_NETWORK, network(OVS_NETWORK, {"networkNamespace": "other"}), PREFIX)
    assert moved["metadata"]["namespace"] == "other"
    assert "ownerReferences" not in moved["metadata"]
    assert moved["metadata"]["annotations"][consts.OWNER_REF_ANNOTATION] == \
        f"OVSNetwork.sriovnetwork.openshift.io/{OPERATOR_NS}/test"


@pytest.mark.parametrize(("kind", "spec", "field"), [
    (SRIOV_NETWORK, {"capabilities": "{not json"}, "capabilities"),
    (SRIOV_IB_NETWORK, {"capabilities": "infinibandGUID"}, "capabilities"),
    (OVS_NETWORK, {"capabilities": "  "}, "capabilities"),
    (SRIOV_NETWORK, {"ipam": "{'type': 'dhcp'}"}, "ipam"),
    (SRIOV_IB_NETWORK, {"metaPlugins": '{"type": "tuning"'}, "metaPlugins"),
    # Each parses nowhere on its own, yet pasted into the template it would give valid JSON with a key
    # the user never wrote: refused too.
    (SRIOV_NETWORK, {"capabilities": '{"mac": true}, "type": "macvlan"'}, "capabilities"),
    (SRIOV_NETWORK, {"metaPlugins": '{"type": "tuning"}], "x": [1'}, "metaPlugins"),
    (SRIOV_NETWORK, {"capabilities": "NaN"}, "capabilities"),
    (SRIOV_NETWORK, {"logFile": '/tmp/a","type":"macvlan'}, "logFile"),
    (SRIOV_NETWORK, {"logFile": '/tmp/a"b'}, "logFile"),
    (SRIOV_NETWORK, {"logFile": "C:\\x"}, "logFile"),
    (OVS_NETWORK, {"bridge": 'br"0'}, "bridge"),
    (OVS_NETWORK, {"interfaceType": "dpdk\\"}, "interfaceType"),
])
def test_unrenderable_values_are_refused_naming_the_field(kind: Kind, spec: dict[str, Any], field: str) -> None:
    with pytest.raises(RenderError, match=rf"^spec\.{field}: .*the NetworkAttachmentDefinition is not rendered"):
        render_nad(kind, network(kind, spec), PREFIX)


@pytest.mark.parametrize(("kind", "spec"), [
    (SRIOV_NETWORK, {"logFile": "C:\\temp", "capabilities": '{"mac": "yes"}', "ipam": '"dhcp"'}),
    (OVS_NETWORK, {"bridge": "br 0", "interfaceType": 'a\\"b'}),
    (SRIOV_IB_NETWORK, {"logFile": 'a"b'}),  # not a field of SriovIBNetwork: never pasted
])
def test_odd_values_that_render_are_rendered_as_upstream(kind: Kind, spec: dict[str, Any]) -> None:
    assert json.loads(render_nad(kind, network(kind, spec), PREFIX)["spec"]["config"])["name"] == "test"


def test_negative_tx_rate_is_rejected_with_field_name() -> None:
    with pytest.raises(RenderError, match=r"spec\.minTxRate"):
        cni_config(SRIOV_NETWORK, network(SRIOV_NETWORK, {"minTxRate": -1}))
