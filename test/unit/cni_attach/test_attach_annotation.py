"""The `k8s.v1.cni.cncf.io/networks` parser (no host: pure data). Cases from Multus's
pkg/k8sclient/k8sclient_test.go tables plus the JSON fields SR-IOV pods use."""

from __future__ import annotations

import pytest

from sriovop.cni.attach.annotation import AnnotationError, NetworkSelection, parse


@pytest.mark.parametrize("value", ["net1", "default/net1", "net1@my_interface", "default/net1@my_interface"])
def test_upstream_accepted_comma_forms(value: str) -> None:
    [sel] = parse(value, "pod-ns")
    assert sel.name == "net1"
    assert sel.namespace == ("default" if value.startswith("default/") else "pod-ns")
    assert sel.interface == ("my_interface" if "@" in value else "")


@pytest.mark.parametrize(("value", "field"), [
    ("root@someIP/root@someOtherIP/root@thirdIP", "networks[0]"),
    ("root@someIP/root@someOtherIP@garbagevalue", "networks[0]"),
    ("root@someIP/root@someOtherIP", "networks[0].namespace"),
    ("default/net1@myIfc Name", "networks[0].interface"),
    ("default/net1@very_long_interface_name", "networks[0].interface"),
    ("a, B", "networks[1].name"),
    ("a,,b", "networks[1]"),
    ("a@", "networks[0].interface"),
])
def test_upstream_rejected_comma_forms_name_the_field(value: str, field: str) -> None:
    with pytest.raises(AnnotationError) as err:
        parse(value, "ns")
    assert err.value.field == field


def test_comma_list_keeps_order_and_trims() -> None:
    assert parse(" a , other/b@eth1,c ", "ns") == [
        NetworkSelection("a", "ns"), NetworkSelection("b", "other", "eth1"), NetworkSelection("c", "ns")]


def test_json_form_with_every_field_sriov_uses() -> None:
    value = ('[{"name": "sriov-net", "namespace": "net-ns", "interface": "vf0", "mac": "CA:FE:C0:FF:EE:00",'
             ' "ips": ["10.1.1.5/24", "fd00::5"], "deviceID": "0000:03:02.1", "cni-args": {"foo": "bar"},'
             ' "default-route": ["10.1.1.1"], "infiniband-guid": "c2:11:22:33:44:55:66:77",'
             ' "portMappings": [{"hostPort": 8080, "containerPort": 80}], "bandwidth": {"ingressRate": 100}},'
             ' {"name": "plain"}]')
    first, second = parse(value, "pod-ns")
    assert first == NetworkSelection(
        name="sriov-net", namespace="net-ns", interface="vf0", mac="CA:FE:C0:FF:EE:00",
        ips=("10.1.1.5/24", "fd00::5"), infiniband_guid="c2:11:22:33:44:55:66:77", device_id="0000:03:02.1",
        cni_args={"foo": "bar"}, default_route=("10.1.1.1",), port_mappings=({"hostPort": 8080, "containerPort": 80},),
        bandwidth={"ingressRate": 100})
    assert second == NetworkSelection("plain", "pod-ns")


def test_json_deprecated_interface_request_is_honoured() -> None:
    [sel] = parse('[{"name": "a", "interfaceRequest": "eth9"}]', "ns")
    assert sel.interface == "eth9"


@pytest.mark.parametrize(("value", "field"), [
    ('[{"name": "a", "mac": "zz:00:00:00:00:00"}]', "networks[0].mac"),
    ('[{"name": "a"}, {"name": "b", "ips": ["10.0.0.300"]}]', "networks[1].ips[0]"),
    ('[{"name": "a", "ips": "10.0.0.1"}]', "networks[0].ips"),
    ('[{"namespace": "x"}]', "networks[0].name"),
    ('[{"name": "A_B"}]', "networks[0].name"),
    ('[{"name": "a", "interface": "a/b"}]', "networks[0].interface"),
    ('[{"name": "a", "cni-args": ["x"]}]', "networks[0].cni-args"),
    ('[{"name": "a", "default-route": ["10.0.0.0/8"]}]', "networks[0].default-route[0]"),
    ('[{"name": "a", "infiniband-guid": "00:11"}]', "networks[0].infiniband-guid"),
    ('[{"name": 5}]', "networks[0].name"),
    ('["a"]', "networks[0]"),
    ('{"name": "a"}', "networks"),
    ('[{"name": "a"', "networks"),
])
def test_json_errors_name_the_field(value: str, field: str) -> None:
    with pytest.raises(AnnotationError) as err:
        parse(value, "ns")
    assert err.value.field == field
    assert field in str(err.value)


def test_blank_value_selects_nothing() -> None:
    assert parse("  ", "ns") == []
