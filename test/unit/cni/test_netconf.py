"""The `sriov` NetConf: every field validated, errors name the field, upstream's MAC precedence.

Host: none (pure parsing).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sriovop.cni.errors import DECODE_FAILURE, INCOMPATIBLE_VERSION, INVALID_CONFIG, CniError
from sriovop.cni.netconf import parse

PCI = "0000:18:02.0"


def conf(**fields: Any) -> bytes:
    base: dict[str, Any] = {"cniVersion": "1.0.0", "name": "net", "type": "sriov", "deviceID": PCI}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not None}).encode()


def error(stdin: bytes, env: dict[str, str] | None = None) -> CniError:
    with pytest.raises(CniError) as info:
        parse(stdin, env or {})
    return info.value


def test_full_configuration_is_parsed() -> None:
    c = parse(conf(vlan=100, vlanQoS=3, vlanProto="802.1AD", mac="02:AA:bb:cc:dd:ee", spoofchk="off",
                   trust="on", link_state="disable", min_tx_rate=10, max_tx_rate=100, logLevel="debug",
                   logFile="/tmp/x.log", ipam={"type": "host-local"}), {})
    assert (c.vlan, c.vlan_qos, c.vlan_proto) == (100, 3, "802.1ad")
    assert c.mac == "02:aa:bb:cc:dd:ee"
    assert (c.spoofchk, c.trust, c.link_state) == ("off", "on", "disable")
    assert (c.min_tx_rate, c.max_tx_rate, c.ipam_type) == (10, 100, "host-local")
    assert (c.log_level, c.log_file) == ("debug", "/tmp/x.log")


def test_device_id_is_required_and_named() -> None:
    err = error(conf(deviceID=None))
    assert err.code == INVALID_CONFIG
    assert "VF pci addr is required" in err.details and err.details.startswith("deviceID")
    assert json.loads(err.to_json())["msg"] == "invalid deviceID"


def test_pci_bus_id_as_multus_sets_it() -> None:
    assert parse(conf(deviceID=None, pciBusID="0000:3B:02.1"), {}).device_id == "0000:3b:02.1"


@pytest.mark.parametrize(("fields", "field", "reason"), [
    ({"deviceID": "18:02.0"}, "deviceID", "not a PCI address"),
    ({"vlan": 4095}, "vlan", "outside 0-4094"),
    ({"vlan": -1}, "vlan", "outside 0-4094"),
    ({"vlan": "100"}, "vlan", "not an integer"),
    ({"vlan": 1, "vlanQoS": 8}, "vlanQoS", "outside 0-7"),
    ({"vlanQoS": 1}, "vlanQoS", "needs vlan"),
    ({"vlan": 0, "vlanQoS": 2}, "vlanQoS", "nonzero vlan"),
    ({"vlan": 5, "vlanProto": "802.1x"}, "vlanProto", "not one of"),
    ({"vlanProto": "802.1q"}, "vlanProto", "needs vlan"),
    ({"vlan": 0, "vlanProto": "802.1ad"}, "vlanProto", "nonzero vlan"),
    ({"mac": "02:aa:bb"}, "mac", "not a MAC"),
    ({"spoofchk": "yes"}, "spoofchk", "not one of"),
    ({"trust": True}, "trust", "not one of"),
    ({"link_state": "up"}, "link_state", "not one of"),
    ({"min_tx_rate": -5}, "min_tx_rate", "outside"),
    ({"max_tx_rate": 1.5}, "max_tx_rate", "not an integer"),
    ({"min_tx_rate": 200, "max_tx_rate": 100}, "min_tx_rate", "above max_tx_rate"),
    ({"logLevel": "verbose"}, "logLevel", "not one of"),
    ({"ipam": "host-local"}, "ipam", "must be an object"),
    ({"ipam": {"type": "../evil"}}, "ipam.type", "not a plugin name"),
    ({"name": ""}, "name", "required"),
    ({"runtimeConfig": {"mac": "zz"}}, "runtimeConfig.mac", "not a MAC"),
])
def test_each_bad_field_is_named(fields: dict[str, Any], field: str, reason: str) -> None:
    err = error(conf(**fields))
    assert err.code == INVALID_CONFIG
    assert err.details.startswith(f"{field}:") and reason in err.details


def test_versions() -> None:
    for version in ("0.3.0", "0.3.1", "0.4.0", "1.0.0"):
        assert parse(conf(cniVersion=version), {}).cni_version == version
    err = error(conf(cniVersion="0.2.0"))
    assert err.code == INCOMPATIBLE_VERSION and "cniVersion" in err.details


def test_not_json() -> None:
    assert error(b"{nope").code == DECODE_FAILURE
    assert error(b"[1]").code == DECODE_FAILURE


def test_mac_precedence_config_then_cni_args_then_runtime_config() -> None:
    assert parse(conf(mac="02:00:00:00:00:01"), {}).mac == "02:00:00:00:00:01"
    args = {"CNI_ARGS": "IgnoreUnknown=true;K8S_POD_NAME=p;MAC=02:00:00:00:00:02"}
    assert parse(conf(mac="02:00:00:00:00:01"), args).mac == "02:00:00:00:00:02"
    assert parse(conf(mac="02:00:00:00:00:01", runtimeConfig={"mac": "02:00:00:00:00:03"}), args).mac \
        == "02:00:00:00:00:03"
    assert error(conf(), {"CNI_ARGS": "MAC=nope"}).details.startswith("CNI_ARGS MAC:")
    assert error(conf(), {"CNI_ARGS": "garbage"}).code == DECODE_FAILURE


def test_go_style_case_insensitive_keys() -> None:
    c = parse(conf(deviceID=None, DEVICEID=PCI, MAC="02:00:00:00:00:09"), {})
    assert (c.device_id, c.mac) == (PCI, "02:00:00:00:00:09")


def test_vlan_proto_defaults_to_8021q_only_with_vlan() -> None:
    assert parse(conf(vlan=7), {}).vlan_proto == "802.1q"
    assert parse(conf(), {}).vlan_proto is None
