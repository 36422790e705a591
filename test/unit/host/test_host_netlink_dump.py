"""The link dump's read loop (sriovop.host.netlink.Netlink._dump_links) on a stand-in socket: which
replies it keeps, when it stops, and what it does with a dump the kernel marks interrupted. The real
kernel's dumps are read in test/integration/host/test_host_netlink_veth.py."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from typing import Any

import pytest
from pyroute2.netlink import NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_MULTI, NLMSG_DONE, NLMSG_ERROR
from pyroute2.netlink.exceptions import NetlinkDecodeError, NetlinkError
from pyroute2.netlink.rtnl import RTM_GETLINK, RTM_NEWLINK

from sriovop.host.netlink import DUMP_ATTEMPTS, Netlink


def _reply(seq: int, kind: int = RTM_NEWLINK, flags: int = NLM_F_MULTI, name: str = "",
           error: Exception | None = None) -> dict[str, Any]:
    return {"header": {"sequence_number": seq, "type": kind, "flags": flags, "error": error}, "name": name}


class _FakeRaw:
    """pyroute2's IPRSocket as `_dump_links` uses it: `put` a request, then `socket.recv` batches that
    `marshal.parse` turns into replies. Each dump answers with the batches `answers` holds for it,
    numbered with the request's sequence number."""

    def __init__(self, answers: list[list[list[tuple[Any, ...]]]]) -> None:
        self.answers = answers
        self.requests: list[int] = []
        self.pending: list[list[dict[str, Any]]] = []
        self.socket = self
        self.marshal = self

    def put(self, msg: Any, msg_type: int, msg_flags: int, msg_seq: int) -> None:
        assert (msg_type, msg_flags & NLM_F_DUMP) == (RTM_GETLINK, NLM_F_DUMP)
        self.requests.append(msg_seq)
        batches = self.answers[len(self.requests) - 1]
        self.pending += [[_reply(msg_seq + off, *rest) for off, *rest in batch] for batch in batches]

    def recv(self, size: int) -> list[dict[str, Any]]:
        return self.pending.pop(0)

    def parse(self, data: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        return iter(data)


def _netlink(raw: _FakeRaw) -> Netlink:
    nl = Netlink(None)
    nl._raw = raw
    return nl


def _names(msgs: list[dict[str, Any]]) -> list[str]:
    return [m["name"] for m in msgs]


def test_a_dump_is_read_across_batches_until_done() -> None:
    raw = _FakeRaw([[[(0, RTM_NEWLINK, NLM_F_MULTI, "lo"), (0, RTM_NEWLINK, NLM_F_MULTI, "pf0")],
                     [(0, RTM_NEWLINK, NLM_F_MULTI, "pf1")], [(0, NLMSG_DONE, NLM_F_MULTI)]]])
    assert _names(_netlink(raw)._dump_links()) == ["lo", "pf0", "pf1"]
    assert len(raw.requests) == 1


def test_replies_to_an_earlier_request_are_skipped() -> None:
    """What an error left unread of an earlier dump carries that dump's sequence number."""
    raw = _FakeRaw([[[(-1, RTM_NEWLINK, NLM_F_MULTI, "stale"), (-1, NLMSG_DONE, NLM_F_MULTI),
                      (0, RTM_NEWLINK, NLM_F_MULTI, "pf0"), (0, NLMSG_DONE, NLM_F_MULTI)]]])
    assert _names(_netlink(raw)._dump_links()) == ["pf0"]


def test_an_interrupted_dump_is_read_again() -> None:
    intr = NLM_F_MULTI | NLM_F_DUMP_INTR
    raw = _FakeRaw([[[(0, RTM_NEWLINK, intr, "pf0")], [(0, NLMSG_DONE, intr)]],
                    [[(0, RTM_NEWLINK, NLM_F_MULTI, "pf0"), (0, RTM_NEWLINK, NLM_F_MULTI, "pf1"),
                      (0, NLMSG_DONE, NLM_F_MULTI)]]])
    assert _names(_netlink(raw)._dump_links()) == ["pf0", "pf1"]
    assert len(raw.requests) == 2 and raw.requests[0] != raw.requests[1]


def test_the_last_interrupted_dump_is_used_as_it_is() -> None:
    """As pyroute2 does with every interrupted dump: discovery reads a link missing from it from sysfs."""
    intr = NLM_F_MULTI | NLM_F_DUMP_INTR
    raw = _FakeRaw([[[(0, RTM_NEWLINK, intr, f"try{n}"), (0, NLMSG_DONE, intr)]] for n in range(DUMP_ATTEMPTS)])
    assert _names(_netlink(raw)._dump_links()) == [f"try{DUMP_ATTEMPTS - 1}"]
    assert len(raw.requests) == DUMP_ATTEMPTS


def test_an_error_reply_is_an_oserror_with_the_kernels_errno() -> None:
    raw = _FakeRaw([[[(0, NLMSG_ERROR, 0, "", NetlinkError(errno.EPERM, "Operation not permitted"))]]])
    with pytest.raises(OSError) as e:
        _netlink(raw)._dump_links()
    assert e.value.errno == errno.EPERM and "link dump" in str(e.value)


@pytest.mark.parametrize(("error", "code"), [
    (OSError(errno.ENOBUFS, "No buffer space available"), errno.ENOBUFS),  # how pyroute2 reports ENOBUFS
    (NetlinkDecodeError(ValueError("short attribute")), errno.EIO),
])
def test_every_kind_of_error_reply_is_an_oserror(error: Exception, code: int) -> None:
    raw = _FakeRaw([[[(0, NLMSG_ERROR, 0, "", error)]]])
    with pytest.raises(OSError) as e:
        _netlink(raw)._dump_links()
    assert e.value.errno == code and "link dump" in str(e.value)
