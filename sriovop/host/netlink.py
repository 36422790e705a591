"""Netlink access (pyroute2) in the network namespace the host layer works in.

Two RTNL sockets per `Netlink`, each opened when first needed: pyroute2's synchronous one for the link
dump of every pass, IPRoute for everything else. Discovery dumps every link once instead of asking per
netdev, which keeps discovering hundreds of VFs cheap. The socket's link replies are cut down to the
attributes read here before pyroute2 decodes them (`_LinkFacts`).

The CNI's `sriovop.cni.rtnl` also sends pyroute2's messages without IPRoute, on a plain socket it opens
in a pod's namespace from the calling thread; it answers one request at a time and reads no dump. Here
both sockets come from pyroute2 in a named namespace, as the rest of the host layer's do.
"""

from __future__ import annotations

import errno as errno_mod
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

import structlog
from pyroute2 import IPRoute, IPRSocket
from pyroute2.netlink import NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REQUEST, NLMSG_DONE
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl import RTM_GETLINK, RTM_NEWLINK
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from tenacity import Retrying, retry_if_result, stop_after_attempt

log = structlog.get_logger("sriovop.host.netlink")

IFF_UP = 0x1
#: ARPHRD_* → NodeState linkType. Upstream maps the encap type ether → ETH, infiniband → IB.
_LINK_TYPES = {1: "ETH", 32: "IB"}


#: The link attributes this module reads: IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_VFINFO_LIST (present
#: only when a request asks for VF info) and IFLA_PROP_LIST (alternative names).
_READ_ATTRS = frozenset({1, 3, 4, 22, 52})
#: struct nlmsghdr + struct ifinfomsg: what precedes a link message's attributes.
_LINK_HEADER = 16 + 16
#: NLA_F_NESTED | NLA_F_NET_BYTEORDER: flag bits of an attribute's type.
_NLA_FLAGS = 0xC000
#: Reads of a link dump the kernel marks interrupted before the last one is used as it is.
DUMP_ATTEMPTS = 3
#: Bytes asked of each recv: the kernel sizes a dump's batches to what the reader asks (up to 32 KiB),
#: and a batch larger than the buffer would be cut.
RECV_SIZE = 65536


class _LinkFacts(ifinfmsg):
    """An RTM_NEWLINK message that pyroute2 decodes with only the attributes in `_READ_ATTRS`.

    pyroute2 builds an object for each of a link's 40-odd attributes (statistics, per-family
    configuration, queues...) however few are read. py-spy on a hollow fleet's daemons during a
    rollout: 52% of their CPU was decoding the link dump of each pass. The message is copied without
    the other attributes, then decoded by pyroute2 as usual; only attribute headers are read here.
    """

    def __init__(self, data: bytes | None = None, offset: int = 0, **kwargs: Any) -> None:
        if data is not None:
            (length,) = struct.unpack_from("I", data, offset)
            end = offset + length
            kept = [bytes(data[offset + 4:offset + _LINK_HEADER])]
            cursor = offset + _LINK_HEADER
            while cursor + 4 <= end:
                attr_len, attr_type = struct.unpack_from("HH", data, cursor)
                if attr_len < 4:
                    break  # malformed: pyroute2 would stop here too
                step = (attr_len + 3) & ~3
                if attr_type & ~_NLA_FLAGS in _READ_ATTRS:
                    kept.append(bytes(data[cursor:cursor + step]))
                cursor += step
            body = b"".join(kept)
            data, offset = struct.pack("I", len(body) + 4) + body, 0
        super().__init__(data, offset=offset, **kwargs)


def _reading_link_facts(ipr: IPRoute) -> IPRoute:
    """The socket's RTM_NEWLINK replies decoded as `_LinkFacts` (this socket's parser map only)."""
    ipr.marshal.msg_map = {**ipr.marshal.msg_map, RTM_NEWLINK: _LinkFacts}
    return ipr


@dataclass(frozen=True)
class LinkInfo:
    index: int
    name: str
    mtu: int
    mac: str
    admin_up: bool
    link_type: str
    alt_names: tuple[str, ...] = field(default_factory=tuple)


def link_info(msg: Any) -> LinkInfo:
    """The facts of one RTM_NEWLINK message, decoded in full or as `_LinkFacts`."""
    alt: list[str] = []
    props = msg.get_attr("IFLA_PROP_LIST")
    if props is not None:
        alt = [v for k, v in props.get("attrs", []) if k == "IFLA_ALT_IFNAME"]
    return LinkInfo(
        index=int(msg["index"]),
        name=str(msg.get_attr("IFLA_IFNAME")),
        mtu=int(msg.get_attr("IFLA_MTU") or 0),
        mac=str(msg.get_attr("IFLA_ADDRESS") or ""),
        admin_up=bool(msg["flags"] & IFF_UP),
        link_type=_LINK_TYPES.get(int(msg["ifi_type"]), "ETH"),
        alt_names=tuple(alt),
    )


def _dump_error(error: Exception) -> OSError:
    """The kernel's refusal (NetlinkError, or pyroute2's OSError for ENOBUFS) or a reply pyroute2 could
    not decode, as an OSError with the kernel's errno (EIO for a decoding error)."""
    code = error.code if isinstance(error, NetlinkError) else getattr(error, "errno", None)
    return OSError(code or errno_mod.EIO, f"netlink link dump: {error}")


class Netlink:
    """RTNL operations in one namespace (`netns=None` means the current one)."""

    def __init__(self, netns: str | None = None) -> None:
        self.netns = netns
        self._ipr: IPRoute | None = None
        self._raw: IPRSocket | None = None
        self._seq = 0
        self._lock = threading.RLock()

    def _sock(self) -> IPRoute:
        if self._ipr is None:
            self._ipr = _reading_link_facts(IPRoute(netns=self.netns) if self.netns else IPRoute())
        return self._ipr

    def close(self) -> None:
        with self._lock:
            if self._ipr is not None:
                self._ipr.close()
                self._ipr = None
            if self._raw is not None:
                self._raw.close()
                self._raw = None

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def links(self) -> dict[str, LinkInfo]:
        with self._lock:
            return {info.name: info for info in map(link_info, self._dump_links())}

    def _dump_links(self) -> list[Any]:
        """Every link of the namespace, read on the plain socket (`_links_socket`). A dump the kernel
        marks interrupted (a link changed while it was read) is read again, DUMP_ATTEMPTS times in
        all; the last is used as it is, as pyroute2 itself does: a link missing from it is read from
        sysfs by discovery."""
        retrying = Retrying(stop=stop_after_attempt(DUMP_ATTEMPTS), retry=retry_if_result(lambda d: d[1]),
                            retry_error_callback=lambda state: state.outcome.result())  # type: ignore[union-attr]
        links, _ = retrying(self._dump_links_once)
        return links

    def _dump_links_once(self) -> tuple[list[Any], bool]:
        raw = self._links_socket()
        self._seq += 1
        seq = self._seq
        raw.put(ifinfmsg(), msg_type=RTM_GETLINK, msg_flags=NLM_F_REQUEST | NLM_F_DUMP, msg_seq=seq)
        links: list[Any] = []
        interrupted = False
        while True:
            for msg in raw.marshal.parse(raw.socket.recv(RECV_SIZE)):
                head = msg["header"]
                if head["sequence_number"] != seq:
                    continue  # what is left of a dump an error cut short
                if head["error"] is not None:
                    raise _dump_error(head["error"])
                interrupted = interrupted or bool(head["flags"] & NLM_F_DUMP_INTR)
                if head["type"] == NLMSG_DONE:
                    return links, interrupted
                links.append(msg)

    def _links_socket(self) -> IPRSocket:
        """pyroute2's synchronous RTNL socket for the link dump of every pass. IPRoute runs each
        request through an asyncio event loop: a dump of eleven links (a hollow host's) took 0.90 ms of
        CPU through it and 0.59 ms on this socket, where a whole pass at rest takes about 2.5 ms. It is
        bound to no multicast group, so nothing but the replies to its own requests arrives on it."""
        if self._raw is None:
            raw = IPRSocket(netns=self.netns) if self.netns else IPRSocket()
            raw.marshal.msg_map = {**raw.marshal.msg_map, RTM_NEWLINK: _LinkFacts}
            self._raw = raw
        return self._raw

    def link(self, name: str) -> LinkInfo | None:
        with self._lock:
            try:
                msgs = self._sock().link("get", ifname=name)
            except NetlinkError as e:
                if e.code in (errno_mod.ENODEV, errno_mod.ENOENT):
                    return None
                raise
        return link_info(msgs[0]) if msgs else None

    def _index(self, name: str) -> int:
        info = self.link(name)
        if info is None:
            raise OSError(errno_mod.ENODEV, f"netdev {name} not found")
        return info.index

    def set_mtu(self, name: str, mtu: int) -> None:
        with self._lock:
            self._call("set", index=self._index(name), mtu=mtu)

    def set_up(self, name: str) -> None:
        with self._lock:
            self._call("set", index=self._index(name), state="up")

    def set_down(self, name: str) -> None:
        with self._lock:
            self._call("set", index=self._index(name), state="down")

    def set_mac(self, name: str, mac: str) -> None:
        with self._lock:
            self._call("set", index=self._index(name), address=mac)

    def add_alt_name(self, name: str, alt: str) -> None:
        with self._lock:
            self._call("property_add", index=self._index(name), altname=alt)

    def set_vf_mac(self, pf_name: str, vf: int, mac: str) -> None:
        """The VF *admin* MAC, set on the PF (IFLA_VF_INFO); survives VF driver rebinds."""
        with self._lock:
            self._call("set", index=self._index(pf_name), vf={"vf": vf, "mac": mac})

    def set_vf_guid(self, pf_name: str, vf: int, guid: str) -> None:
        """An InfiniBand VF's node and port GUID, set on the PF (IFLA_VF_IB_NODE_GUID/PORT_GUID); the VF's
        driver picks them up when it binds next."""
        with self._lock:
            self._call("set", index=self._index(pf_name), vf={"vf": vf, "ib_node_guid": guid, "ib_port_guid": guid})

    def vf_stats(self, pf_name: str) -> dict[int, dict[str, int]]:
        """IFLA_VF_STATS of every VF of a PF, keyed by VF index (empty when the link has no VFs)."""
        with self._lock:
            try:
                msgs = self._sock().link("get", ifname=pf_name, ext_mask=1)  # RTEXT_FILTER_VF
            except NetlinkError:
                return {}
        out: dict[int, dict[str, int]] = {}
        for msg in msgs:
            vflist = msg.get_attr("IFLA_VFINFO_LIST")
            if vflist is None:
                continue
            for info in vflist.get_attrs("IFLA_VF_INFO"):
                mac = info.get_attr("IFLA_VF_MAC") or {}
                stats = info.get_attr("IFLA_VF_STATS")
                if stats is None or "vf" not in mac:
                    continue
                out[int(mac["vf"])] = {
                    k[len("IFLA_VF_STATS_"):].lower(): int(v) for k, v in stats.get("attrs", [])
                    if k.startswith("IFLA_VF_STATS_") and k != "IFLA_VF_STATS_PAD"
                }
        return out

    def _call(self, cmd: str, **kwargs: Any) -> None:
        try:
            self._sock().link(cmd, **kwargs)
        except NetlinkError as e:
            raise OSError(e.code, f"netlink {cmd} {kwargs}: {e}") from e
