"""The plugins' drain/reboot rules beyond the generic SR-IOV one, as pure functions shared with
`sriovop plan`: managed OVS bridges, Mellanox firmware (mstconfig settings in, changes and reboot out)
and the virtual platform; `decide_node` combines them as the daemon's plugins do."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.host.decision import HostFacts, decide_generic, decide_node, decide_virtual
from sriovop.host.errors import HostError, ValidationError
from sriovop.host.mellanox_firmware import cards, firmware_changes, nics_to_query

P0, P1 = "0000:3b:00.0", "0000:3b:00.1"
OTHER = "0000:5e:00.0"
FW_OK = {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": 2, "LINK_TYPE_P2": 2}


def mlx(pci: str, num_vfs: int = 0) -> dict[str, Any]:
    return {"pciAddress": pci, "vendor": "15b3", "deviceID": "101d", "numVfs": num_vfs, "totalvfs": 127, "mtu": 1500}


def want(pci: str, num_vfs: int, **extra: Any) -> dict[str, Any]:
    return {"pciAddress": pci, "numVfs": num_vfs, **extra}


def bridge(name: str, n_rxq: str = "2") -> dict[str, Any]:
    return {"name": name, "uplinks": [{"pciAddress": P0, "name": "ens1f0np0",
                                       "interface": {"options": {"n_rxq": n_rxq}}}]}


# -- Mellanox firmware ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "fw", "settings", "reboot"), [
    ([want(P0, 4)], FW_OK, {}, False),                                         # firmware allows it already
    ([want(P0, 16)], FW_OK, {P0: {"NUM_OF_VFS": 16}}, True),                   # raising NUM_OF_VFS
    ([want(P0, 4)], {**FW_OK, "SRIOV_EN": 0}, {P0: {"SRIOV_EN": 1}}, True),    # SR-IOV off in firmware
    ([want(P1, 4, linkType="ib")], FW_OK, {P0: {"LINK_TYPE_P2": 1}}, True),    # port 2 link type, on the card
    ([want(P0, 2), want(P1, 12)], FW_OK, {P0: {"NUM_OF_VFS": 12}}, True),      # the largest port decides
    ([], FW_OK, {P0: {"NUM_OF_VFS": 0}}, False),                               # configured card left the spec
])
def test_mellanox_firmware_changes(spec: list[dict[str, Any]], fw: dict[str, int], settings: dict[str, Any],
                                   reboot: bool) -> None:
    result = firmware_changes(spec, [mlx(P0), mlx(P1)], {P0: fw}, {P0})
    assert (dict(result.settings), result.reboot) == (settings, reboot)
    assert bool(result.reasons) == reboot


def test_mellanox_unknown_firmware_is_not_decided_and_only_needed_cards_are_queried() -> None:
    status = [mlx(P0), mlx(P1), mlx(OTHER), {"pciAddress": "0000:18:00.0", "vendor": "8086"}]
    assert cards(status) == [P0, OTHER]
    assert nics_to_query([want(P1, 4)], status, set()) == [P0]
    assert nics_to_query([], status, {OTHER}) == [OTHER]
    assert firmware_changes([want(P0, 64)], status, {}, set()).reboot is False


def test_mellanox_externally_managed_firmware_change_is_refused() -> None:
    with pytest.raises(HostError, match=f"pf {P0}.*externallyManaged"):
        firmware_changes([want(P0, 64, externallyManaged=True)], [mlx(P0)], {P0: FW_OK}, set())


def test_decide_node_reboots_for_firmware_with_the_reason() -> None:
    facts = HostFacts(mellanox_firmware={P0: FW_OK})
    result = decide_node({"interfaces": [want(P0, 32)]}, {"interfaces": [mlx(P0)]}, facts)
    assert (result.level, result.missing_kernel_args) == ("reboot", ())
    assert result.reboot_reasons == (f"nic {P0}: firmware NUM_OF_VFS 8 < 32",)
    assert decide_node({"interfaces": [want(P0, 8)]}, {"interfaces": [mlx(P0)]}, facts).level == "none"


# -- managed OVS bridges -------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "status", "manages", "level"), [
    ([bridge("br-a")], [], True, "drain"),                      # a new bridge
    ([bridge("br-a")], [bridge("br-a")], True, "none"),         # OVS has it already
    ([bridge("br-a", "4")], [bridge("br-a")], True, "drain"),   # uplink settings differ
    ([], [bridge("br-a")], True, "drain"),                      # a managed bridge goes away
    ([bridge("br-a")], [], False, "none"),                      # not managed: apply fails, no drain
])
def test_bridge_changes(spec: list[dict[str, Any]], status: list[dict[str, Any]], manages: bool,
                        level: str) -> None:
    facts = HostFacts(manages_bridges=manages)
    result = decide_generic({"bridges": {"ovs": spec}}, {"bridges": {"ovs": status}}, facts)
    assert result.level == level
    assert ("spec.bridges differs from the managed OVS bridges" in result.drain_reasons) == (level == "drain")


# -- virtual platforms ---------------------------------------------------------------------------------

def test_virtual_drains_only_when_an_applied_configuration_changes() -> None:
    first = [want(P0, 1, mtu=1500)]
    assert decide_virtual({"interfaces": first}, []).level == "none"
    assert decide_virtual({"interfaces": first}, first).level == "none"
    assert decide_virtual({"interfaces": [want(P0, 1, mtu=9000)]}, first).level == "drain"
    facts = HostFacts(virtual=True, virtual_last_applied=tuple(first), cmdline=frozenset(), iommu_args=("iommu=pt",))
    vfio = [want(P0, 1, vfGroups=[{"deviceType": "vfio-pci", "resourceName": "r", "vfRange": "0-0"}])]
    assert decide_node({"interfaces": vfio}, {"interfaces": [mlx(P0)]}, facts).level == "drain"  # never a reboot
    with pytest.raises(ValidationError, match=r"spec\.bridges"):
        decide_node({"bridges": {"ovs": [bridge("br-a")]}}, {}, facts)


def test_new_host_facts_round_trip_and_bad_input() -> None:
    facts = HostFacts(configured={P0: False}, manages_bridges=True, mellanox_firmware={P0: FW_OK},
                      virtual=True, virtual_last_applied=({"pciAddress": P0, "numVfs": 1},))
    assert HostFacts.from_json(facts.to_json()) == facts
    with pytest.raises(ValueError, match="mellanoxFirmware"):
        HostFacts.from_json('{"mellanoxFirmware": {"x": 1}}')
    with pytest.raises(ValueError, match="virtualLastApplied"):
        HostFacts.from_json('{"virtualLastApplied": {}}')


def test_mellanox_lockdown_and_bluefield_dpu() -> None:
    status = [mlx(P0), mlx(P1), {"pciAddress": OTHER, "vendor": "8086"}]
    with pytest.raises(HostError, match=r"kernel lockdown \(integrity\)"):
        firmware_changes([want(P0, 4)], status, {}, set(), lockdown="integrity")
    assert firmware_changes([want(OTHER, 4)], status, {}, set(), lockdown="integrity").settings == {}
    with pytest.raises(HostError, match="BlueField in DPU mode"):
        firmware_changes([want(P0, 64)], status, {P0: FW_OK}, set(), dpu={P0})
    assert firmware_changes([want(P0, 4)], status, {P0: FW_OK}, set(), dpu={P0}).settings == {}  # nothing to change
    raised = firmware_changes([want(P0, 64)], status, {P0: FW_OK}, set())
    assert raised.reboot_cards == (P0,)
    facts = HostFacts(lockdown="integrity", mellanox_dpu=frozenset({P0}))
    assert HostFacts.from_json(facts.to_json()) == facts
    with pytest.raises(HostError, match="lockdown"):
        decide_node({"interfaces": [want(P0, 4)]}, {"interfaces": status}, facts)
