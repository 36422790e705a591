"""Netlink operations of sriovop.host.netlink on a veth pair in a throwaway network namespace."""

from __future__ import annotations

import errno
import uuid
from collections.abc import Iterator

import pytest
from pyroute2 import IPRoute, netns

from sriovop.host.netlink import Netlink, link_info


@pytest.fixture
def veth_ns() -> Iterator[str]:
    name = f"sriovop-nltest-{uuid.uuid4().hex[:8]}"
    netns.create(name)
    try:
        with IPRoute(netns=name) as ipr:
            ipr.link("add", ifname="tpf0", kind="veth", peer={"ifname": "tpf0peer"})
        yield name
    finally:
        netns.remove(name)


def test_mtu_up_down_mac_and_alt_names(veth_ns: str) -> None:
    with Netlink(veth_ns) as nl:
        before = nl.link("tpf0")
        assert before is not None and not before.admin_up and before.link_type == "ETH"

        nl.set_mtu("tpf0", 9000)
        nl.set_up("tpf0")
        nl.set_mac("tpf0", "02:11:22:33:44:55")
        nl.add_alt_name("tpf0", "enp99s0f0np0")
        after = nl.link("tpf0")
        assert after is not None
        assert (after.mtu, after.admin_up, after.mac) == (9000, True, "02:11:22:33:44:55")
        assert after.alt_names == ("enp99s0f0np0",)

        assert nl.vf_stats("tpf0") == {}  # veth has no VFs
        nl.set_down("tpf0")
        dumped = nl.links()
        assert set(dumped) >= {"lo", "tpf0", "tpf0peer"}
        assert not dumped["tpf0"].admin_up and dumped["tpf0"].mtu == 9000


def test_errors_are_oserrors_with_the_kernel_errno(veth_ns: str) -> None:
    with Netlink(veth_ns) as nl:
        assert nl.link("nosuchdev") is None
        with pytest.raises(OSError) as e:
            nl.set_mtu("nosuchdev", 1500)
        assert e.value.errno == errno.ENODEV
        with pytest.raises(OSError) as e:
            nl.set_mtu("tpf0", 10)  # below the minimum MTU
        assert e.value.errno == errno.EINVAL
        with pytest.raises(OSError) as e:
            nl.set_vf_mac("tpf0", 0, "02:00:00:00:00:01")  # veth has no VFs
        assert e.value.errno == errno.EOPNOTSUPP


def test_namespace_isolation(veth_ns: str) -> None:
    """The host layer only sees links of the namespace it was pointed at."""
    with Netlink(veth_ns) as inside, Netlink(None) as outside:
        assert "tpf0" in inside.links()
        assert "tpf0" not in outside.links()


def test_a_dump_reads_what_pyroute2_decodes_in_full(veth_ns: str) -> None:
    """`links()` decodes only the attributes it reads (`_LinkFacts`): each link's facts must equal
    those from pyroute2's own full decoding, alternative names, MAC, MTU and flags included."""
    with Netlink(veth_ns) as nl:
        nl.set_mtu("tpf0", 9000)
        nl.set_up("tpf0")
        nl.set_mac("tpf0", "02:11:22:33:44:66")
        nl.add_alt_name("tpf0", "enp98s0f0np0")
        nl.add_alt_name("tpf0peer", "enp98s0f0v0")
        with IPRoute(netns=veth_ns) as ipr:
            full = {info.name: info for info in map(link_info, ipr.get_links())}
            assert len(ipr.get_links()[0]["attrs"]) > 10  # the plain socket still decodes everything
        trimmed = nl.links()
        assert trimmed == full
        assert trimmed["tpf0"].alt_names == ("enp98s0f0np0",) and trimmed["tpf0"].mac == "02:11:22:33:44:66"
        assert nl.link("tpf0peer") == full["tpf0peer"]


def test_a_dump_longer_than_one_read_is_read_whole(veth_ns: str) -> None:
    """`links()` reads its dump off pyroute2's plain socket until the kernel's NLMSG_DONE: 303 links are
    hundreds of KiB, many batches of one recv each, and every link must be there, equal to what
    IPRoute's own dump decodes; a second dump on the same socket must not see the first's leftovers."""
    with IPRoute(netns=veth_ns) as ipr:
        for i in range(150):
            ipr.link("add", ifname=f"many{i}", kind="veth", peer={"ifname": f"many{i}p"})
        full = {info.name: info for info in map(link_info, ipr.get_links())}
    assert len(full) == 303  # lo, tpf0, tpf0peer and 300 more
    with Netlink(veth_ns) as nl:
        assert nl.links() == full
        nl.set_mtu("many149", 4000)
        again = nl.links()
    assert again["many149"].mtu == 4000 and len(again) == 303
