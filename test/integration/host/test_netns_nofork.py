"""Named network namespaces and a netlink socket in one, without a fork (sriovop/host/netns_nofork.py).

Host: this machine's kernel (real namespaces and veths, as root); no API server. The calling process
holds extra threads, as a hollow fleet's hosts process does, and none of them may change namespace.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator

import pytest
from pyroute2 import IPRoute, netns

from sriovop.host.netns_nofork import create_named, netlink_in


@pytest.fixture
def name() -> Iterator[str]:
    ns = f"nofork-{uuid.uuid4().hex[:8]}"
    yield ns
    try:
        netns.remove(ns)
    except OSError:
        pass


def test_create_and_use_a_named_namespace_without_moving_any_thread(name: str) -> None:
    stop = threading.Event()
    bystanders = [threading.Thread(target=stop.wait, daemon=True) for _ in range(8)]
    for t in bystanders:
        t.start()
    here = os.stat("/proc/thread-self/ns/net").st_ino
    try:
        create_named(name)
        assert os.stat(f"/var/run/netns/{name}").st_ino != here
        assert os.stat("/proc/thread-self/ns/net").st_ino == here  # the caller stayed where it was
        fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
        try:
            ipr = netlink_in(fd)
        finally:
            os.close(fd)
        with ipr:
            ipr.link("add", ifname="pfx0", kind="veth", peer={"ifname": "pfx0p"})
            assert {str(m.get_attr("IFLA_IFNAME")) for m in ipr.get_links()} == {"lo", "pfx0", "pfx0p"}
        with IPRoute() as host:
            assert host.link_lookup(ifname="pfx0") == []  # created in the namespace, not here
    finally:
        stop.set()


def test_creating_a_taken_name_fails(name: str) -> None:
    create_named(name)
    with pytest.raises(FileExistsError):
        create_named(name)
