"""network-status rendering against upstream's own examples (no host: pure data).

Golden data: the Multus quickstart's annotation (docs/quickstart.md) and the cases of
network-attachment-definition-client's pkg/utils/net-attach-def_test.go, rebuilt as CNI result JSON.
"""

from __future__ import annotations

import json

from sriovop.cni.attach import status

QUICKSTART = """[{
    "name": "cbr0",
    "ips": [
        "10.244.1.73"
    ],
    "default": true,
    "dns": {}
},{
    "name": "macvlan-conf",
    "interface": "net1",
    "ips": [
        "192.168.1.205"
    ],
    "mac": "86:1d:96:ff:55:0d",
    "dns": {}
}]"""


def test_quickstart_annotation_is_reproduced_byte_for_byte() -> None:
    default = {"cniVersion": "0.3.1", "interfaces": [{"name": "cni0", "mac": "0a:58:0a:f4:01:01"}],
               "ips": [{"version": "4", "address": "10.244.1.73/24", "gateway": "10.244.1.1"}]}
    macvlan = {"cniVersion": "0.3.1",
               "interfaces": [{"name": "net1", "mac": "86:1d:96:ff:55:0d", "sandbox": "/proc/1/ns/net"}],
               "ips": [{"version": "4", "address": "192.168.1.205/24", "interface": 0}]}
    entries = status.entries(default, "cbr0", True) + status.entries(macvlan, "macvlan-conf", False)
    assert status.render(entries) == QUICKSTART


def test_single_interface_result_with_mtu_dual_stack_and_device_info() -> None:
    result = {"cniVersion": "1.0.0",
              "interfaces": [{"name": "net1", "mac": "92:79:27:01:7c:cf", "sandbox": "/proc/1123/ns/net",
                              "mtu": 9000}],
              "ips": [{"address": "1.1.1.3/24"}, {"address": "2001::1/64"}]}
    info = {"type": "pci", "version": "v1.1.0",
            "pci": {"pci-address": "0000:01:02.2", "pf-pci-address": "0000:01:02.0", "representor-device": "eth3"}}
    [entry] = status.entries(result, "test-net-attach-def", False, info)
    assert entry == {"name": "test-net-attach-def", "interface": "net1", "ips": ["1.1.1.3", "2001::1"],
                     "mac": "92:79:27:01:7c:cf", "mtu": 9000, "dns": {}, "device-info": info}
    assert list(entry) == ["name", "interface", "ips", "mac", "mtu", "dns", "device-info"]


def test_default_routes_become_gateways_and_other_routes_do_not() -> None:
    base = {"interfaces": [{"name": "net1", "sandbox": "/x"}], "ips": [{"address": "1.1.1.3/24"}]}
    routed = {**base, "routes": [{"dst": "0.0.0.0/0", "gw": "10.10.10.10"}, {"gw": "20.20.20.20"},
                                 {"dst": "10.10.10.0/24", "gw": "10.10.10.1"}]}
    [entry] = status.entries(routed, "n", False)
    assert entry["gateway"] == ["10.10.10.10", "20.20.20.20"]
    [plain] = status.entries({**base, "routes": [{"dst": "10.10.10.0/24", "gw": "10.10.10.10"}]}, "n", False)
    assert "gateway" not in plain


def test_default_is_the_sandbox_interface_that_owns_the_gateway_address() -> None:
    result = {"cniVersion": "1.0.0",
              "interfaces": [{"name": "0xsomething", "mac": "be:ee:ee:ee:ee:ef"},
                             {"name": "eth0", "mac": "b1:aa:aa:aa:a5:ee", "sandbox": "/var/run/netns/a"},
                             {"name": "0xotherthing", "mac": "b0:00:00:00:00:0f"},
                             {"name": "other-primary", "mac": "c0:00:00:00:00:01", "sandbox": "/var/run/netns/a"}],
              "ips": [{"interface": 1, "address": "10.244.1.6/24"},
                      {"interface": 3, "address": "10.20.1.3/24", "gateway": "10.20.1.1"}]}
    entries = status.entries(result, "test-network", True)
    assert [(e["interface"], e.get("default", False), e["ips"]) for e in entries] == [
        ("eth0", False, ["10.244.1.6"]), ("other-primary", True, ["10.20.1.3"])]


def test_addresses_without_an_interface_index_go_to_the_last_sandbox_interface() -> None:
    one = {"interfaces": [{"name": "eth0", "sandbox": "/p"}, {"name": "foo"}], "ips": [{"address": "192.0.2.1/24"}]}
    assert [(e["interface"], e.get("ips")) for e in status.entries(one, "m", False)] == [("eth0", ["192.0.2.1"])]
    two = {"interfaces": [{"name": "foo"}, {"name": "eth0", "sandbox": "/p"}, {"name": "eth1", "sandbox": "/q"}],
           "ips": [{"address": "192.0.2.1/24"}]}
    assert [(e["interface"], e.get("ips")) for e in status.entries(two, "m", False)] == [
        ("eth0", None), ("eth1", ["192.0.2.1"])]


def test_multiple_interfaces_with_dns_first_sandbox_is_default_without_a_gateway() -> None:
    result = {"cniVersion": "1.1.0",
              "interfaces": [{"name": "foo", "mac": "00:AA:BB:CC:DD:33"},
                             {"name": "example0", "mac": "00:AA:BB:CC:DD:01", "sandbox": "/p", "mtu": 1500},
                             {"name": "example1", "mac": "00:AA:BB:CC:DD:02", "sandbox": "/p", "mtu": 1500}],
              "ips": [{"address": "192.0.2.1/24", "interface": 1}, {"address": "192.0.2.2/24", "interface": 1},
                      {"address": "192.0.2.3/24", "interface": 2}],
              "dns": {"nameservers": ["8.8.8.8", "8.8.4.4"], "search": ["example.com"], "options": ["ndots:2"]}}
    secondary = status.entries(result, "test-multi-net-attach-def", False)
    assert [(e["interface"], e["mtu"], e["ips"], e.get("default", False)) for e in secondary] == [
        ("example0", 1500, ["192.0.2.1", "192.0.2.2"], False), ("example1", 1500, ["192.0.2.3"], False)]
    assert secondary[0]["dns"] == result["dns"]
    primary = status.entries(result, "test-multi-net-attach-def", True)
    assert [e.get("default", False) for e in primary] == [True, False]
    assert json.loads(status.render(primary))[0]["default"] is True
