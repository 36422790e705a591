"""Saving and restoring a VF's PF-side state: what ADD changes, and the change that undoes it.

ADD captures the VF's attributes before touching it (`OrigVfState` in the cache); DEL and a failed
ADD apply `undo(...)`: every attribute the configuration set goes back to its captured value. The
admin MAC is restored whenever it was captured, as upstream does (a MAC left behind by a pod would
be handed to the next pod and duplicate on the wire).
"""

from __future__ import annotations

from typing import Any

from sriovop.cni.netconf import NetConf, lookup
from sriovop.cni.vfkernel import VfChange, VfConfig

ZERO_MAC = "00:00:00:00:00:00"


def wanted(conf: NetConf) -> VfChange:
    """The PF-side attributes the configuration asks for (None: not mentioned, left alone)."""
    return VfChange(
        admin_mac=conf.mac,
        vlan=(conf.vlan, conf.vlan_qos or 0, conf.vlan_proto or "802.1q") if conf.vlan is not None else None,
        rate=(conf.min_tx_rate or 0, conf.max_tx_rate or 0) if conf.has_rate else None,
        spoofchk=None if conf.spoofchk is None else conf.spoofchk == "on",
        trust=None if conf.trust is None else conf.trust == "on",
        link_state=conf.link_state,
    )


def undo(orig: VfConfig, change: VfChange, *, admin_mac: bool = False) -> VfChange:
    """The change that puts back every attribute `change` touches (and the admin MAC if asked)."""
    restore_mac = change.admin_mac is not None or admin_mac
    return VfChange(
        admin_mac=orig.admin_mac if restore_mac else None,
        vlan=(orig.vlan, orig.vlan_qos, orig.vlan_proto) if change.vlan is not None else None,
        rate=(orig.min_tx_rate, orig.max_tx_rate) if change.rate is not None else None,
        spoofchk=orig.spoofchk if change.spoofchk is not None else None,
        trust=orig.trust if change.trust is not None else None,
        link_state=orig.link_state if change.link_state is not None else None,
    )


def from_cached_netconf(netconf: dict[str, Any]) -> VfChange:
    """What a cached configuration set (ours or upstream's), to be undone at DEL."""
    vlan = lookup(netconf, "vlan")
    has_rate = lookup(netconf, "min_tx_rate") is not None or lookup(netconf, "max_tx_rate") is not None
    spoof = lookup(netconf, "spoofchk") or None
    trust = lookup(netconf, "trust") or None
    return VfChange(
        vlan=(int(vlan), 0, "802.1q") if vlan is not None else None,
        rate=(0, 0) if has_rate else None,
        spoofchk=(spoof == "on") if spoof else None,
        trust=(trust == "on") if trust else None,
        link_state=lookup(netconf, "link_state") or None,
    )
