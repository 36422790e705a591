"""The Mellanox plugin's "which firmware settings change, and does that need a reboot?" as a pure
function of the spec, the discovered status and the firmware settings `mstconfig` reports.

Pure so that `sriovop plan` decides with the same code as the daemon: the daemon publishes the queried
settings in its host facts (see host.decision), the plugin passes the ones it just queried.

Firmware settings are per NIC, not per port, so the ports of a dual-port card (same PCI bus/device,
functions .0/.1) are decided together: NUM_OF_VFS is the largest numVfs asked of any port. Raising it
or enabling SR-IOV or changing a link type needs a reboot; lowering it is written without one (the
next reboot picks it up). Operator-configured NICs that left the spec get NUM_OF_VFS=0.

As upstream, firmware is left alone where it cannot or must not be changed: under kernel lockdown the
tools cannot reach the NIC, so a spec naming a Mellanox PF fails and nothing is decided; a BlueField in
DPU mode is configured from its Arm side, so a change it would need fails naming the PF.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sriovop.host.errors import HostError

VENDOR = "15b3"
LINK_TYPES = {"eth": 2, "ib": 1}

Firmware = Mapping[str, Mapping[str, int]]


def nic_key(pci: str) -> str:
    """`0000:3b:00.1` → `0000:3b:00` (all functions of one card)."""
    return pci.rsplit(".", 1)[0]


def _nics(status_interfaces: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The Mellanox PFs of the status grouped per card, ports sorted (the first port names the card)."""
    nics: dict[str, list[str]] = {}
    for pci in sorted(str(s["pciAddress"]) for s in status_interfaces if s.get("vendor") == VENDOR):
        nics.setdefault(nic_key(pci), []).append(pci)
    return list(nics.values())


def cards(status_interfaces: Sequence[Mapping[str, Any]]) -> list[str]:
    """The first port of every Mellanox card in the status."""
    return [ports[0] for ports in _nics(status_interfaces)]


def nics_to_query(spec_interfaces: Sequence[Mapping[str, Any]], status_interfaces: Sequence[Mapping[str, Any]],
                  configured: Collection[str]) -> list[str]:
    """First ports of the cards whose firmware the decision reads: in the spec, or operator-configured."""
    wanted = {str(s["pciAddress"]) for s in spec_interfaces}
    return [ports[0] for ports in _nics(status_interfaces)
            if any(p in wanted or p in configured for p in ports)]


@dataclass(frozen=True)
class FirmwareChanges:
    #: first-port PCI address → settings to write
    settings: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    reboot: bool = False
    reasons: tuple[str, ...] = ()
    #: First ports of the cards whose settings only load at the next boot (mstfwreset candidates).
    reboot_cards: tuple[str, ...] = ()


def firmware_changes(spec_interfaces: Sequence[Mapping[str, Any]], status_interfaces: Sequence[Mapping[str, Any]],
                     firmware: Firmware, configured: Collection[str], *, dpu: Collection[str] = (),
                     lockdown: str = "") -> FirmwareChanges:
    """Cards missing from `firmware` are not decided (their settings are unknown); `dpu`: first ports of
    BlueField cards in DPU mode; `lockdown`: the kernel lockdown mode. Raises HostError when a PF in
    the spec would need a firmware change that cannot be made (externallyManaged, DPU) or any Mellanox
    PF is in the spec under lockdown."""
    status = {str(s["pciAddress"]) for s in status_interfaces if s.get("vendor") == VENDOR}
    spec = {str(s["pciAddress"]): s for s in spec_interfaces if s["pciAddress"] in status}
    if lockdown:
        if spec:
            raise HostError(f"pf {sorted(spec)[0]}: kernel lockdown ({lockdown}) is on: Mellanox firmware "
                            "cannot be read or changed; turn lockdown off or remove the Mellanox PFs "
                            "from the policies")
        return FirmwareChanges()
    changes: dict[str, dict[str, int]] = {}
    reasons: list[str] = []
    reboot_cards: list[str] = []
    for ports in _nics(status_interfaces):
        first = ports[0]
        fw = firmware.get(first)
        if fw is None:
            continue
        in_spec = [p for p in ports if p in spec]
        if not in_spec:
            if any(p in configured for p in ports) and fw.get("NUM_OF_VFS", 0) != 0:
                changes[first] = {"NUM_OF_VFS": 0}
            continue
        want_vfs = max(int(spec[p].get("numVfs") or 0) for p in in_spec)
        settings: dict[str, int] = {}
        nic_reasons: list[str] = []
        if want_vfs > 0 and fw.get("SRIOV_EN", 0) != 1:
            settings["SRIOV_EN"] = 1
            nic_reasons.append(f"nic {first}: firmware SRIOV_EN is off")
        if want_vfs > fw.get("NUM_OF_VFS", 0):
            settings["NUM_OF_VFS"] = want_vfs
            nic_reasons.append(f"nic {first}: firmware NUM_OF_VFS {fw.get('NUM_OF_VFS', 0)} < {want_vfs}")
        for p in in_spec:
            link = str(spec[p].get("linkType") or "").lower()
            key = f"LINK_TYPE_P{ports.index(p) + 1}"
            if link in LINK_TYPES and key in fw and fw[key] != LINK_TYPES[link]:
                settings[key] = LINK_TYPES[link]
                nic_reasons.append(f"nic {first}: firmware {key} is not {link}")
        if settings:
            managed = [p for p in in_spec if spec[p].get("externallyManaged")]
            if managed:
                raise HostError(f"pf {managed[0]}: firmware changes {settings} are needed but the PF is "
                                "externallyManaged; configure the firmware out of band")
            if first in dpu:
                raise HostError(f"pf {in_spec[0]}: firmware changes {settings} are needed but the NIC is a "
                                "BlueField in DPU mode, where a host reboot does not reload its firmware; "
                                "configure it from the DPU")
            changes[first] = settings
            reasons.extend(nic_reasons)
            reboot_cards.append(first)
    return FirmwareChanges(settings=changes, reboot=bool(reasons), reasons=tuple(reasons),
                           reboot_cards=tuple(reboot_cards))
