"""Netlink sockets inside another network namespace, opened without forking.

A netlink socket is bound to the namespace of the thread that creates it. pyroute2's own
`IPRoute(netns=...)` forks a child that enters the namespace and passes the socket back; in a large,
busy process (a daemons process of a hollow fleet holds hundreds of threads) that fork is slow, and
pyroute2 gives up after a few seconds ("no response from the child"), which killed the host processes
of a 500-node fleet while it started. `netlink_in` creates the socket on a short-lived thread that has
entered the namespace instead (setns acts on the calling thread only) and hands it to pyroute2: no
fork, and no other thread of the process ever changes namespace.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
from typing import Any

from pyroute2 import IPRoute

CLONE_NEWNET = 0x40000000
NETLINK_ROUTE = 0
#: Where `ip netns add NAME` (and pyroute2's netns.create) bind a named namespace.
NETNS_DIR = "/var/run/netns"
_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd: int) -> None:
    """Move the calling thread (only) into the network namespace `fd`."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setns: {os.strerror(code)}")


def netlink_in(netns_fd: int | None) -> IPRoute:
    """An IPRoute whose socket lives in the namespace `netns_fd` (None: this process's)."""
    if netns_fd is None:
        return IPRoute()
    result: list[Any] = []

    def create() -> None:
        try:
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                setns(netns_fd)
                try:
                    result.append(socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE))
                finally:
                    setns(own)
            finally:
                os.close(own)
        except BaseException as e:  # handed to the caller below
            result.append(e)

    thread = threading.Thread(target=create, name="netns-socket")
    thread.start()
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    return IPRoute(use_socket=result[0])


def netlink_named(netns: str | None) -> IPRoute:
    """An IPRoute in the namespace called `netns` (a name under /var/run/netns, or a path to a
    namespace file, as pyroute2 takes them; None: this process's). The namespace must exist: unlike
    pyroute2's `IPRoute(netns=...)`, a missing one is an error (FileNotFoundError), never created."""
    if netns is None:
        return IPRoute()
    path = netns if "/" in netns else os.path.join(NETNS_DIR, netns)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return netlink_in(fd)
    finally:
        os.close(fd)
