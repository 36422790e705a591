"""Real netlink on the VF netdev: sockets inside a pod's network namespace, and the move in and out.

A pod's namespace arrives as an open file descriptor (the shim passes it); `netlink_in(fd)`
(sriovop.host.netns_nofork) opens a socket in it without a fork and without a mount of the runtime's
netns path, and the server's own threads never change namespace.

Moving goes through a temporary name unique to the move (`sv<12 hex>`): renamed in the namespace it
leaves, moved, renamed to its final name in the namespace it reaches. The kernel applies a name sent
with the move only after the move (a clash leaves the device in the target under its old name), so
the final name is a separate step whose failure is easy to undo, and neither namespace can clash with
the other's names (a host interface called net1, e.g. a VF returned by a dead pod; a pod eth0).
"""

from __future__ import annotations

import errno as errno_mod
import os
import secrets
from contextlib import AbstractContextManager
from typing import Any

import tenacity
from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.cni.worker_sockets import kept_per_worker
from sriovop.host.netns_nofork import netlink_in


def netlink_at(path: str) -> AbstractContextManager[tuple[IPRoute, int]]:
    """A netlink socket in the namespace at `path` and an open descriptor of it.

    On the server's worker threads both are kept for the thread's life (`sriovop.cni.worker_sockets`):
    a fresh pyroute2 socket costs its construction and an event-loop set-up on its first request."""
    return kept_per_worker("netlink", path, netlink_in, IPRoute.close)


class LinkError(OSError):
    """A netlink operation on a named link failed; the message says which and why."""


def index_of(ipr: IPRoute, name: str) -> int | None:
    link = get_link(ipr, name)
    return int(link["index"]) if link else None


def get_link(ipr: IPRoute, name: str) -> dict[str, Any] | None:
    """One request: index, name, MAC, MTU, up and altnames of the link called `name` (None: no such link)."""
    try:
        msgs = ipr.link("get", ifname=name)
    except NetlinkError as e:
        if e.code in (errno_mod.ENODEV, errno_mod.ENOENT):
            return None
        raise
    return {"index": int(msgs[0]["index"]), **_state(msgs[0])} if msgs else None


def link_state(ipr: IPRoute, index: int) -> dict[str, Any]:
    return _state(ipr.link("get", index=index)[0])


def _state(msg: Any) -> dict[str, Any]:
    props = msg.get_attr("IFLA_PROP_LIST")
    alt = [v for k, v in props.get("attrs", [])] if props is not None else []
    return {"name": msg.get_attr("IFLA_IFNAME"), "mac": str(msg.get_attr("IFLA_ADDRESS") or "").lower(),
            "mtu": int(msg.get_attr("IFLA_MTU") or 0), "up": bool(msg["flags"] & 1), "altnames": alt}


def call(ipr: IPRoute, what: str, cmd: str, **kwargs: Any) -> None:
    try:
        ipr.link(cmd, **kwargs)
    except NetlinkError as e:
        raise LinkError(e.code, f"{what}: {os.strerror(e.code)}") from e


def temp_name() -> str:
    """A name no other interface has, for the moment between two namespaces."""
    return "sv" + secrets.token_hex(6)


def move(src: IPRoute, index: int, target_fd: int, what: str) -> None:
    """Move link `index` (in `src`'s namespace, down) into `target_fd`'s namespace, name unchanged."""
    call(src, what, "set", index=index, state="down")
    call(src, what, "set", index=index, net_ns_fd=target_fd)


def rename(ipr: IPRoute, index: int, name: str, what: str, **more: Any) -> None:
    """Rename link `index` (down); `more` goes in the same request (address, state, ...)."""
    try:
        ipr.link("set", index=index, ifname=name, **more)
    except NetlinkError as e:
        if e.code == errno_mod.EEXIST:
            raise LinkError(e.code, f"{what}: an interface named {name} already exists there") from e
        raise LinkError(e.code, f"{what}: {os.strerror(e.code)}") from e


#: Errors a VF driver gives while it resets after its PF changed its admin MAC (the VF asks the PF over
#: the mailbox, which refuses or does not answer until the reset is done).
TRANSIENT_MAC = (errno_mod.EADDRNOTAVAIL, errno_mod.EBUSY, errno_mod.EAGAIN, errno_mod.EIO)


def set_mac(ipr: IPRoute, index: int, mac: str, what: str, attempts: int = 20, wait: float = 0.1) -> None:
    """Set a VF netdev's MAC, retried (upstream's 20 x 100 ms) while the driver is busy resetting.

    A VF whose PF has set the same MAC administratively may refuse to set it itself (igb refuses any
    MAC request from a VF with a PF-set MAC) until its driver resets and reads the PF's MAC as its
    own: between attempts the link is taken down and up (which resets igbvf), and a MAC that already
    is the wanted one counts as set."""
    def attempt() -> None:
        if link_state(ipr, index)["mac"] == mac.lower():
            return
        try:
            call(ipr, what, "set", index=index, address=mac)
        except LinkError as e:
            if e.errno in TRANSIENT_MAC:
                up = link_state(ipr, index)["up"]
                call(ipr, f"{what}: resetting the link", "set", index=index, state="up")
                if not up:
                    call(ipr, f"{what}: resetting the link", "set", index=index, state="down")
                if link_state(ipr, index)["mac"] == mac.lower():
                    return
            raise

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts), wait=tenacity.wait_fixed(wait), reraise=True,
        retry=tenacity.retry_if_exception(lambda e: isinstance(e, LinkError) and e.errno in TRANSIENT_MAC))
    for tried in retrying:
        with tried:
            attempt()
