"""`host_vfs` on a guest listing (no guest: a scripted shell): a VF netdev that left while it was read
(its MAC missing) is left out instead of failing the poll that waits for the VFs to come back."""

from __future__ import annotations

from typing import Any

from test.support.vm_node_pods import host_vfs


class ListingShell:
    def __init__(self, out: str) -> None:
        self.out = out

    def check(self, _cmd: str) -> str:
        return self.out


def test_a_vf_netdev_gone_mid_read_is_left_out() -> None:
    shell: Any = ListingShell("0000:01:10.0 eth1 aa:bb:cc:00:00:01\n0000:01:10.2 eth2\n")
    assert host_vfs(shell, "0000:01:00.0") == {"0000:01:10.0": ("eth1", "aa:bb:cc:00:00:01")}
