"""The CNI's seam to the kernel for the PF side of a VF (what `ip link set <pf> vf N ...` does).

`RealVfKernel` talks PF netlink (IFLA_VFINFO_LIST) in the host's network namespace. A host without a
NIC to answer IFLA_VF_* (the development simulator, whose PFs are veths) gets another implementation
injected by whoever builds the server (`ServerOptions.kernel`). Everything on the VF netdev itself
(moving it into the pod, renaming, MAC, MTU, up) is real netlink in both cases (`sriovop.cni.links`).
"""

from __future__ import annotations

import errno as errno_mod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.cni.rtnl import VfSettings, rtnl_at
from sriovop.cni.vfdevice import sysfs_netdev

#: IFLA_VF_LINK_STATE values.
LINK_STATE_VALUES = {"auto": 0, "enable": 1, "disable": 2}
LINK_STATE_NAMES = {v: k for k, v in LINK_STATE_VALUES.items()}
PROTO_VALUES = {"802.1q": 0x8100, "802.1ad": 0x88A8}
PROTO_NAMES = {v: k for k, v in PROTO_VALUES.items()}


@dataclass(frozen=True)
class VfConfig:
    """A VF's attributes as its PF reports them."""

    admin_mac: str = "00:00:00:00:00:00"
    vlan: int = 0
    vlan_qos: int = 0
    vlan_proto: str = "802.1q"
    spoofchk: bool = True
    trust: bool = False
    link_state: str = "auto"
    min_tx_rate: int = 0
    max_tx_rate: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VfChange:
    """Attributes to set on a VF through its PF; None = leave alone."""

    admin_mac: str | None = None
    vlan: tuple[int, int, str] | None = None  # (vlan, qos, proto)
    rate: tuple[int, int] | None = None  # (min, max) Mbps
    spoofchk: bool | None = None
    trust: bool | None = None
    link_state: str | None = None

    def empty(self) -> bool:
        return all(v is None for v in asdict(self).values())


class VfKernel(Protocol):
    def vf_config(self, pf: str, pf_pci: str, vf: int) -> VfConfig:
        """The VF's current attributes; OSError when the PF or VF is gone."""

    def set_vf(self, pf: str, pf_pci: str, vf: int, change: VfChange) -> None:
        """Apply `change`, attribute by attribute in upstream's order; OSError naming the attribute."""

    def set_vf_guid(self, pf: str, pf_pci: str, vf: int, guid: str) -> None:
        """An InfiniBand VF's node and port GUID."""

    @property
    def host_netns(self) -> str:
        """The path of the host's network namespace (where VF netdevs live outside pods)."""

    def vf_netdev(self, root: Path, vf_pci: str) -> str | None:
        """The name of the VF's netdev in the host's network namespace (None: none there)."""


def _flag(value: int | None, default: bool) -> bool:
    if value is None or value == 0xFFFFFFFF:  # -1: the driver does not report it
        return default
    return bool(value)


def parse_vf_info(msg: Any, vf: int) -> VfConfig | None:
    """The VF's entry in a PF's RTM_NEWLINK (dumped with RTEXT_FILTER_VF)."""
    vflist = msg.get_attr("IFLA_VFINFO_LIST")
    if vflist is None:
        return None
    for info in vflist.get_attrs("IFLA_VF_INFO"):
        mac = info.get_attr("IFLA_VF_MAC") or {}
        if int(mac.get("vf", -1)) != vf:
            continue
        vlan = info.get_attr("IFLA_VF_VLAN") or {}
        proto = "802.1q"
        vlist = info.get_attr("IFLA_VF_VLAN_LIST")
        if vlist is not None:
            for ivvi in vlist.get_attrs("IFLA_VF_VLAN_INFO"):
                proto = PROTO_NAMES.get(int(ivvi.get("proto", 0x8100)), "802.1q")
                break
        rate = info.get_attr("IFLA_VF_RATE") or {}
        spoof = info.get_attr("IFLA_VF_SPOOFCHK") or {}
        trust = info.get_attr("IFLA_VF_TRUST") or {}
        link = info.get_attr("IFLA_VF_LINK_STATE") or {}
        return VfConfig(
            admin_mac=str(mac.get("mac", "00:00:00:00:00:00")).lower(),
            vlan=int(vlan.get("vlan", 0)), vlan_qos=int(vlan.get("qos", 0)), vlan_proto=proto,
            spoofchk=_flag(spoof.get("spoofchk"), True), trust=_flag(trust.get("trust"), False),
            link_state=LINK_STATE_NAMES.get(int(link.get("link_state", 0)), "auto"),
            min_tx_rate=int(rate.get("min_tx_rate", 0)), max_tx_rate=int(rate.get("max_tx_rate", 0)),
        )
    return None


def one_by_one(change: VfChange) -> list[tuple[str, VfChange]]:
    """`change` split into one change per attribute, in upstream's order (vlan, MAC, rate, spoofchk,
    trust, link state), each labelled with the config field it comes from, so a refusal names it."""
    out: list[tuple[str, VfChange]] = []
    if change.vlan is not None:
        out.append(("vlan" if change.vlan[2] == "802.1q" else "vlanProto", VfChange(vlan=change.vlan)))
    if change.admin_mac is not None:
        out.append(("mac", VfChange(admin_mac=change.admin_mac)))
    if change.rate is not None:
        out.append(("max_tx_rate", VfChange(rate=change.rate)))
    if change.spoofchk is not None:
        out.append(("spoofchk", VfChange(spoofchk=change.spoofchk)))
    if change.trust is not None:
        out.append(("trust", VfChange(trust=change.trust)))
    if change.link_state is not None:
        out.append(("link_state", VfChange(link_state=change.link_state)))
    return out


def vf_settings(vf: int, change: VfChange) -> VfSettings:
    """Every attribute of `change` for one IFLA_VF_INFO (one RTM_SETLINK on the PF)."""
    vlan = None
    if change.vlan is not None:
        vlan = (change.vlan[0], change.vlan[1], PROTO_VALUES[change.vlan[2]])
    return VfSettings(vf=vf, mac=change.admin_mac, vlan=vlan, rate=change.rate, spoofchk=change.spoofchk,
                      trust=change.trust,
                      link_state=None if change.link_state is None else LINK_STATE_VALUES[change.link_state])


class RealVfKernel:
    """PF netlink in this process's network namespace (the host's, under hostNetwork).

    Reads and writes go through `sriovop.cni.rtnl` on a socket a server worker keeps: the VF list is
    one RTM_GETLINK by the PF's name, a change is one RTM_SETLINK by name carrying every IFLA_VF_* in
    one IFLA_VF_INFO (PF drivers take each attribute through its own ndo_set_vf_* call, as with
    separate requests). The kernel applies them in its own order (MAC, VLAN, rates, spoofchk, link
    state, trust) and stops at the first refusal without saying which: then the attributes go again
    one request each in upstream's order, so the error names the refused one exactly as before."""

    def _ipr(self) -> IPRoute:
        return IPRoute()

    @property
    def host_netns(self) -> str:
        return "/proc/self/ns/net"

    def vf_netdev(self, root: Path, vf_pci: str) -> str | None:
        return sysfs_netdev(root, vf_pci)

    def _pf_index(self, ipr: IPRoute, pf: str) -> int:
        found = ipr.link_lookup(ifname=pf)
        if not found:
            raise OSError(errno_mod.ENODEV, f"PF netdev {pf} not found")
        return int(found[0])

    def vf_config(self, pf: str, pf_pci: str, vf: int) -> VfConfig:
        with rtnl_at(self.host_netns) as (nl, _fd):
            try:
                msg = nl.vf_list(pf)
            except NetlinkError as e:
                if e.code == errno_mod.ENODEV:
                    raise OSError(e.code, f"PF netdev {pf} not found") from e
                raise OSError(e.code, f"reading VF {vf} of {pf}: {e}") from e
        config = parse_vf_info(msg, vf)
        if config is None:
            raise OSError(errno_mod.ENODEV, f"PF {pf} reports no VF {vf}")
        return config

    def set_vf(self, pf: str, pf_pci: str, vf: int, change: VfChange) -> None:
        if change.empty():
            return
        with rtnl_at(self.host_netns) as (nl, _fd):
            try:
                nl.set_link(name=pf, vf=vf_settings(vf, change))
                return
            except NetlinkError as e:
                if e.code == errno_mod.ENODEV and nl.link(pf) is None:
                    raise OSError(e.code, f"PF netdev {pf} not found") from e
            for field_name, single in one_by_one(change):
                try:
                    nl.set_link(name=pf, vf=vf_settings(vf, single))
                except NetlinkError as e:
                    raise OSError(e.code, f"{field_name}: {pf} refused it for VF {vf}: {e}") from e

    def set_vf_guid(self, pf: str, pf_pci: str, vf: int, guid: str) -> None:
        with self._ipr() as ipr:
            index = self._pf_index(ipr, pf)
            try:
                ipr.link("set", index=index, vf={"vf": vf, "ib_node_guid": guid, "ib_port_guid": guid})
            except NetlinkError as e:
                raise OSError(e.code, f"guid: {pf} refused it for VF {vf}: {e}") from e
