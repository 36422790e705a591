"""After DEL's restore: read the VF back and put back whatever still differs from what ADD found.

Why: the restore's requests can succeed while the VF ends up elsewhere. A VF driver answers its
netdev's MAC request before its PF has (igbvf keeps the MAC it asked for when the PF's mailbox answer
is late, and takes the PF's MAC at its next reset), and a loaded node makes that late answer common.
So DEL reads the final state back: the host netdev's name, MAC and MTU, and every PF-side attribute
DEL restored (the admin MAC, and what the configuration changed: VLAN/QoS/proto, rates, spoofchk,
trust, link state). What differs is applied again until it matches or the deadline passes; a VF still
different then fails the DEL with each attribute named (found vs expected), the cache stays, and the
runtime's next DEL tries again, instead of the next pod getting a VF in a state nobody chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tenacity

from sriovop.cni.cache import CachedAdd
from sriovop.cni.context import Node
from sriovop.cni.errors import DEVICE_FAILURE, CniError
from sriovop.cni.links import call, get_link, rename, set_mac
from sriovop.cni.vfdevice import VfDevice
from sriovop.cni.vfkernel import VfChange, VfConfig
from sriovop.cni.vfstate import ZERO_MAC, from_cached_netconf, undo

#: How long DEL keeps re-applying a VF that does not read back as ADD found it.
SETTLE_DEADLINE_S = 30.0
SETTLE_INTERVAL_S = 0.5


@dataclass(frozen=True)
class Difference:
    """One attribute of the VF that does not read back as ADD found it."""

    what: str
    found: Any
    expected: Any

    def __str__(self) -> str:
        return f"{self.what} is {self.found!r}, ADD found {self.expected!r}"


class _Differs(Exception):
    def __init__(self, differences: list[Difference]) -> None:
        super().__init__("; ".join(map(str, differences)))
        self.differences = differences


def restored_change(cached: CachedAdd) -> VfChange:
    """The PF-side change DEL applies: every attribute the configuration set, back to its captured
    value, and the admin MAC whenever ADD set one or found one (upstream restores it then)."""
    restore_mac = bool(cached.mac) or cached.orig.config.admin_mac != ZERO_MAC
    return undo(cached.orig.config, from_cached_netconf(cached.netconf), admin_mac=restore_mac)


def _pf_differences(change: VfChange, got: VfConfig) -> list[Difference]:
    pairs: list[tuple[str, Any, Any]] = [
        ("admin MAC", change.admin_mac, got.admin_mac),
        ("vlan/qos/proto", change.vlan, (got.vlan, got.vlan_qos, got.vlan_proto)),
        ("min/max tx rate", change.rate, (got.min_tx_rate, got.max_tx_rate)),
        ("spoofchk", change.spoofchk, got.spoofchk),
        ("trust", change.trust, got.trust),
        ("link_state", change.link_state, got.link_state),
    ]
    return [Difference(what, found, want) for what, want, found in pairs if want is not None and want != found]


def _fix_pf(node: Node, vf: VfDevice, change: VfChange, differences: list[Difference]) -> None:
    names = {d.what for d in differences}
    node.kernel.set_vf(vf.pf_name, vf.pf_pci, vf.index, VfChange(
        admin_mac=change.admin_mac if "admin MAC" in names else None,
        vlan=change.vlan if "vlan/qos/proto" in names else None,
        rate=change.rate if "min/max tx rate" in names else None,
        spoofchk=change.spoofchk if "spoofchk" in names else None,
        trust=change.trust if "trust" in names else None,
        link_state=change.link_state if "link_state" in names else None))


def _netdev_differences(node: Node, cached: CachedAdd, pci: str) -> list[Difference]:
    orig = cached.orig
    name = node.kernel.vf_netdev(node.root, pci)
    if name is None:
        return [Difference("host netdev", None, orig.host_ifname)]
    found: list[Difference] = []
    if name != orig.host_ifname:
        found.append(Difference("name", name, orig.host_ifname))
    with node.host_netlink() as (host, _fd):
        link = get_link(host, name)
    if link is None:
        return [Difference("host netdev", None, orig.host_ifname)]
    if orig.effective_mac and link["mac"] != orig.effective_mac:
        found.append(Difference("MAC", link["mac"], orig.effective_mac))
    if orig.mtu and link["mtu"] != orig.mtu:
        found.append(Difference("MTU", link["mtu"], orig.mtu))
    return found


def _fix_netdev(node: Node, cached: CachedAdd, pci: str) -> None:
    orig = cached.orig
    name = node.kernel.vf_netdev(node.root, pci)
    if name is None:
        return  # nothing to fix in the host (yet): the next read says so again
    with node.host_netlink() as (host, _fd):
        link = get_link(host, name)
        if link is None:
            return
        index = link["index"]
        call(host, f"{name} down", "set", index=index, state="down")
        if orig.effective_mac and link["mac"] != orig.effective_mac:
            set_mac(host, index, orig.effective_mac, f"restoring MAC {orig.effective_mac} on {name}")
        if orig.mtu and link["mtu"] != orig.mtu:
            call(host, f"restoring MTU {orig.mtu} on {name}", "set", index=index, mtu=orig.mtu)
        if name != orig.host_ifname:
            rename(host, index, orig.host_ifname, f"renaming {name} back to {orig.host_ifname}")


def settle(node: Node, cached: CachedAdd, vf: VfDevice, *, deadline_s: float | None = None,
           interval_s: float = SETTLE_INTERVAL_S) -> list[Difference]:
    """Read the VF back until it is as ADD found it, re-applying what differs; returns the differences
    it had to fix (empty: the restore held). CniError naming every difference at the deadline
    (`SETTLE_DEADLINE_S` unless given)."""
    deadline_s = SETTLE_DEADLINE_S if deadline_s is None else deadline_s
    change = restored_change(cached)
    netdev = not cached.dpdk_mode and bool(cached.orig.host_ifname)
    fixed: list[Difference] = []

    def read() -> tuple[list[Difference], list[Difference]]:
        try:
            got = node.kernel.vf_config(vf.pf_name, vf.pf_pci, vf.index)
        except OSError as e:
            raise _Differs([Difference("PF-side state", f"unreadable ({e})", "readable")]) from e
        return _pf_differences(change, got), _netdev_differences(node, cached, vf.pci) if netdev else []

    def attempt() -> None:
        pf_diffs, net_diffs = read()
        if not pf_diffs and not net_diffs:
            return
        fixed.extend(d for d in [*pf_diffs, *net_diffs] if d not in fixed)
        try:  # PF side first, as the restore does: igb refuses a VF MAC the PF does not hold
            if pf_diffs:
                _fix_pf(node, vf, change, pf_diffs)
            if net_diffs:
                _fix_netdev(node, cached, vf.pci)
        except OSError as e:  # LinkError too; read again after the interval, the deadline names what is left
            raise _Differs([*pf_diffs, *net_diffs, Difference("re-applying", str(e), "success")]) from e
        pf_diffs, net_diffs = read()
        if pf_diffs or net_diffs:
            raise _Differs([*pf_diffs, *net_diffs])

    retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(deadline_s), wait=tenacity.wait_fixed(interval_s),
                                 retry=tenacity.retry_if_exception_type(_Differs), reraise=True)
    try:
        for tried in retrying:
            with tried:
                attempt()
    except _Differs as e:
        raise CniError(DEVICE_FAILURE, "the VF did not return to the state ADD found",
                       f"deviceID {vf.pci} after {deadline_s:g}s: {e}") from e
    return fixed
