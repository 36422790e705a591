"""The ADD path's rtnetlink requests (`sriovop.cni.rtnl`) as the kernel receives them.

Host: none (bytes only; the "kernel" end of a socket pair answers with messages pyroute2 encodes).
Each request is decoded by pyroute2's own `ifinfmsg` (no knowledge of our subclass), i.e. read the way
the kernel reads it; the PF request for 802.1Q attributes must be byte for byte what `IPRoute.link
("set", vf=...)` sends (what the real-kernel e2e runs proved before); the 802.1ad VLAN entry must have
the kernel's struct size.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyroute2.netlink import NLM_F_ACK, NLM_F_REQUEST, NLMSG_ERROR, nlmsgerr
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl import RTM_NEWLINK, RTM_SETLINK
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from pyroute2.requests.link import LinkIPRouteFilter

from sriovop.cni.rtnl import Rtnl, VfSettings, setlink_request
from sriovop.cni.vfkernel import VfChange, one_by_one, vf_settings


def as_kernel_reads(data: bytes) -> Any:
    """A request decoded by pyroute2's plain ifinfmsg."""
    msg = ifinfmsg(data)
    msg.decode()
    return msg


def vf_attrs(data: bytes) -> dict[str, Any]:
    """The single IFLA_VF_INFO of a request: attribute name → its fields."""
    [info] = as_kernel_reads(data).get_attr("IFLA_VFINFO_LIST").get_attrs("IFLA_VF_INFO")
    return {name: value for name, value in info["attrs"]}


def pyroute2_set_vf(index: int, spec: dict[str, Any]) -> bytes:
    """What IPRoute sends for `link("set", index=index, vf=spec)` (its request filter, its encoder)."""
    msg = ifinfmsg()
    msg["header"]["type"] = RTM_SETLINK
    msg["header"]["flags"] = NLM_F_REQUEST | NLM_F_ACK
    msg["header"]["sequence_number"] = 1
    msg["index"] = index
    msg["attrs"] = [("IFLA_VFINFO_LIST", LinkIPRouteFilter("set").get_vf(dict(spec)))]
    msg.encode()
    return bytes(msg.data)


@pytest.mark.parametrize("ours, theirs", [
    (VfSettings(vf=3, vlan=(100, 2, 0x8100)), {"vf": 3, "vlan": {"vlan": 100, "qos": 2}}),
    (VfSettings(vf=0, mac="02:00:00:00:aa:01"), {"vf": 0, "mac": "02:00:00:00:aa:01"}),
    (VfSettings(vf=1, spoofchk=False), {"vf": 1, "spoofchk": 0}),
    (VfSettings(vf=1, trust=True), {"vf": 1, "trust": 1}),
    (VfSettings(vf=2, link_state=2), {"vf": 2, "link_state": 2}),
    (VfSettings(vf=2, rate=(10, 500)), {"vf": 2, "rate": {"min_tx_rate": 10, "max_tx_rate": 500}}),
])
def test_one_attribute_is_sent_as_iproute_sends_it(ours: VfSettings, theirs: dict[str, Any]) -> None:
    assert bytes(setlink_request(7, vf=ours, seq=1).data) == pyroute2_set_vf(7, theirs)


def test_every_attribute_goes_in_one_vf_info_and_decodes_to_the_values_sent() -> None:
    change = VfChange(admin_mac="02:00:00:00:aa:01", vlan=(100, 3, "802.1q"), rate=(0, 1000), spoofchk=False,
                      trust=True, link_state="disable")
    data = bytes(setlink_request(name="ens1f0", vf=vf_settings(7, change)).data)
    msg = as_kernel_reads(data)
    assert msg["header"]["type"] == RTM_SETLINK and msg["header"]["flags"] == NLM_F_REQUEST | NLM_F_ACK
    assert (msg["index"], msg.get_attr("IFLA_IFNAME"), msg["change"]) == (0, "ens1f0", 0)
    got = vf_attrs(data)
    assert list(got) == ["IFLA_VF_MAC", "IFLA_VF_VLAN", "IFLA_VF_RATE", "IFLA_VF_SPOOFCHK", "IFLA_VF_LINK_STATE",
                         "IFLA_VF_TRUST"]
    assert got["IFLA_VF_MAC"]["mac"] == "02:00:00:00:aa:01" and got["IFLA_VF_MAC"]["vf"] == 7
    assert (got["IFLA_VF_VLAN"]["vlan"], got["IFLA_VF_VLAN"]["qos"], got["IFLA_VF_VLAN"]["vf"]) == (100, 3, 7)
    assert (got["IFLA_VF_RATE"]["min_tx_rate"], got["IFLA_VF_RATE"]["max_tx_rate"]) == (0, 1000)
    assert got["IFLA_VF_SPOOFCHK"]["spoofchk"] == 0 and got["IFLA_VF_TRUST"]["trust"] == 1
    assert got["IFLA_VF_LINK_STATE"]["link_state"] == 2


def test_an_802_1ad_vlan_is_a_vlan_list_entry_of_the_kernels_struct_size() -> None:
    """struct ifla_vf_vlan_info is 16 bytes (three u32 and a be16, padded); the kernel refuses a
    shorter IFLA_VF_VLAN_INFO with EINVAL, which is what IPRoute's 14-byte entry gets."""
    data = bytes(setlink_request(5, vf=VfSettings(vf=4, vlan=(200, 1, 0x88A8))).data)
    [vinfo] = vf_attrs(data)["IFLA_VF_VLAN_LIST"].get_attrs("IFLA_VF_VLAN_INFO")
    assert (vinfo["vf"], vinfo["vlan"], vinfo["qos"], vinfo["proto"]) == (4, 200, 1, 0x88A8)
    assert vinfo.length == 4 + 16
    theirs = pyroute2_set_vf(5, {"vf": 4, "vlan": [{"vlan": 200, "qos": 1, "proto": 0x88A8}]})
    [short] = vf_attrs(theirs)["IFLA_VF_VLAN_LIST"].get_attrs("IFLA_VF_VLAN_INFO")
    assert short.length == 4 + 14


def test_the_move_into_the_pod_is_one_request_keeping_the_ifindex() -> None:
    data = bytes(setlink_request(42, net_ns_fd=9, new_ifindex=42, address="02:00:00:00:aa:01", ifname="net1",
                                 up=True).data)
    msg = as_kernel_reads(data)
    assert (msg["index"], msg["flags"] & 1, msg["change"] & 1) == (42, 1, 1)
    assert [name for name, _ in msg["attrs"]] == ["IFLA_NET_NS_FD", "IFLA_NEW_IFINDEX", "IFLA_ADDRESS",
                                                  "IFLA_IFNAME"]
    assert (msg.get_attr("IFLA_NET_NS_FD"), msg.get_attr("IFLA_NEW_IFINDEX")) == (9, 42)
    assert (msg.get_attr("IFLA_ADDRESS"), msg.get_attr("IFLA_IFNAME")) == ("02:00:00:00:aa:01", "net1")


def test_taking_a_link_down_clears_iff_up_in_the_change_mask() -> None:
    msg = as_kernel_reads(bytes(setlink_request(3, up=False).data))
    assert (msg["flags"] & 1, msg["change"] & 1, msg["attrs"]) == (0, 1, [])


def test_a_refusal_is_retried_attribute_by_attribute_in_upstreams_order() -> None:
    change = VfChange(admin_mac="02:00:00:00:aa:01", vlan=(5, 0, "802.1ad"), rate=(0, 10), spoofchk=True,
                      trust=False, link_state="auto")
    singles = one_by_one(change)
    assert [name for name, _ in singles] == ["vlanProto", "mac", "max_tx_rate", "spoofchk", "trust", "link_state"]
    assert [len(vf_attrs(bytes(setlink_request(1, vf=vf_settings(0, single)).data))) for _, single in singles] \
        == [1] * 6


class _error(nlmsgerr):
    """The kernel's NLMSG_ERROR: the error and, for a refusal, the request it refuses."""

    fields = (("error", "i"), ("request", "s"))


def answer(request: bytes, error: int = 0) -> bytes:
    """The kernel's acknowledgement (error 0) or refusal of `request`."""
    asked = as_kernel_reads(request)
    msg = _error()
    msg["header"]["type"] = NLMSG_ERROR
    msg["header"]["sequence_number"] = asked["header"]["sequence_number"]
    msg["error"] = -error
    msg["request"] = request if error else b""
    msg.encode()
    return bytes(msg.data)


def newlink_seq(seq: int) -> bytes:
    msg = ifinfmsg()
    msg["header"]["type"] = RTM_NEWLINK
    msg["header"]["sequence_number"] = seq
    msg["index"] = 42
    msg["flags"] = 0x1 | 0x40
    msg["attrs"] = [("IFLA_IFNAME", "net1"), ("IFLA_ADDRESS", "02:00:00:00:AA:01"), ("IFLA_MTU", 9000),
                    ("IFLA_IFALIAS", "0000:18:02.0"),
                    ("IFLA_PROP_LIST", {"attrs": [("IFLA_ALT_IFNAME", "enp24s2"), ("IFLA_ALT_IFNAME", "x1")]})]
    msg.encode()
    return bytes(msg.data)


def newlink(request: bytes) -> bytes:
    return newlink_seq(as_kernel_reads(request)["header"]["sequence_number"])


class Kernel:
    """The far end of a socket pair: answers each request with what `replies` makes of it, in order."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.requests: list[bytes] = []

    def serve(self, *replies: Callable[[bytes], list[bytes]]) -> threading.Thread:
        def run() -> None:
            for reply in replies:
                request = self.sock.recv(65536)
                self.requests.append(request)
                for data in reply(request):
                    self.sock.send(data)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


@pytest.fixture
def pair() -> Iterator[tuple[Rtnl, Kernel]]:
    ours, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with Rtnl(ours) as nl:
        yield nl, Kernel(far)
    far.close()


def test_a_refusal_is_a_netlink_error_with_the_kernels_errno_and_late_answers_are_skipped(
        pair: tuple[Rtnl, Kernel]) -> None:
    nl, kernel = pair
    done = kernel.serve(lambda req: [newlink_seq(99), answer(req, errno.EOPNOTSUPP)],  # 99: an abandoned request
                        lambda req: [answer(req)])
    with pytest.raises(NetlinkError) as refused:
        nl.set_link(5, vf=VfSettings(vf=0, link_state=1))
    assert refused.value.code == errno.EOPNOTSUPP
    nl.set_link(5, up=True)
    done.join(30)
    first, second = (as_kernel_reads(r) for r in kernel.requests)
    assert first["index"] == 5 and first.get_attr("IFLA_VFINFO_LIST") is not None
    assert second["header"]["sequence_number"] != first["header"]["sequence_number"]


def test_a_link_reply_decodes_to_its_name_mac_mtu_state_altnames_and_alias(pair: tuple[Rtnl, Kernel]) -> None:
    nl, kernel = pair
    done = kernel.serve(lambda req: [newlink(req)], lambda req: [answer(req, errno.ENODEV)])
    link = nl.link("net1")
    assert link is not None
    assert (link.index, link.name, link.mac, link.mtu, link.up) == (42, "net1", "02:00:00:00:aa:01", 9000, True)
    assert link.altnames == ("enp24s2", "x1") and link.alias == "0000:18:02.0"
    assert nl.link("gone") is None
    done.join(30)
    asked = as_kernel_reads(kernel.requests[0])
    assert (asked.get_attr("IFLA_IFNAME"), asked.get_attr("IFLA_EXT_MASK")) == ("net1", 1 << 3)
