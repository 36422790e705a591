"""Named network namespaces, and netlink sockets inside a namespace, without forking.

pyroute2's `netns.create(name)` forks a child that unshares the namespace and answers the parent;
the parent gives up after 2 s ("no response from the child"). In a large, busy process (the hosts
process of a hollow fleet holds hundreds of threads) a fork is slow, and under load those 2 s ran
out: a hosts process of a 500-node fleet died while it started. Namespaces are per thread, so here a
short-lived thread does the work and exits: `create_named` unshares its namespace and has pyroute2
bind it under /var/run/netns (`netns.attach`, which does not fork); `netlink_in` enters a namespace
and creates a socket it hands to pyroute2 (the CNI's sockets). No other thread of the process ever
changes namespace.

An IPRoute built on a handed-over socket serves only the thread that built it (pyroute2 refuses
`use_socket` from another thread), so objects shared between threads (the daemon's `Netlink`, a
simulator's own socket) keep pyroute2's `IPRoute(netns=...)`, which opens a socket per thread.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pyroute2 import IPRoute, netns

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE = 0
_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


def _on_own_thread(work: Callable[[], T], name: str) -> T:
    """Run `work` on a new thread (whose namespace changes die with it); its result or its error."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as e:  # handed to the caller below
            result.append(e)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return cast(T, result[0])


def create_named(name: str) -> None:
    """Create the network namespace `name` (bound under /var/run/netns, as `ip netns add`)."""

    def create() -> None:
        if _libc.unshare(CLONE_NEWNET) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"unshare: {os.strerror(code)}")
        netns.attach(name, "thread-self")  # the calling thread's new namespace

    _on_own_thread(create, "netns-create")


def setns(fd: int) -> None:
    """Move the calling thread (only) into the network namespace `fd`."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setns: {os.strerror(code)}")


def netlink_in(netns_fd: int | None) -> IPRoute:
    """An IPRoute whose socket lives in the namespace `netns_fd` (None: this process's)."""
    if netns_fd is None:
        return IPRoute()

    def create() -> socket.socket:
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            setns(netns_fd)
            try:
                return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE)
            finally:
                setns(own)
        finally:
            os.close(own)

    return IPRoute(use_socket=_on_own_thread(create, "netns-socket"))
