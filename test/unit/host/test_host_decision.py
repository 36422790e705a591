"""The drain/reboot decision as a pure function (shared by the daemon's generic plugin and `sriovop plan`)."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.host.decision import HostFacts, decide

PF = "0000:3b:00.0"
IOMMU = ("intel_iommu=on", "iommu=pt")


def status(num_vfs: int, mtu: int = 1500, driver: str = "iavf") -> dict[str, Any]:
    return {"pciAddress": PF, "name": "ens1f0", "numVfs": num_vfs, "mtu": mtu, "totalvfs": 64,
            "Vfs": [{"vfID": i, "driver": driver, "mtu": mtu} for i in range(num_vfs)]}


def spec(num_vfs: int, mtu: int = 1500, device_type: str = "netdevice") -> dict[str, Any]:
    return {"pciAddress": PF, "numVfs": num_vfs, "mtu": mtu,
            "vfGroups": [{"resourceName": "r", "deviceType": device_type, "vfRange": f"0-{num_vfs - 1}"}]}


@pytest.mark.parametrize(("specs", "stat", "configured", "cmdline", "level"), [
    ([spec(4)], status(0), {}, IOMMU, "none"),                       # 0 -> N never drains
    ([spec(4)], status(4), {PF: False}, IOMMU, "none"),              # already as wanted
    ([spec(2)], status(4), {PF: False}, IOMMU, "drain"),             # configured PF with VFs changes
    ([spec(2)], status(4), {}, IOMMU, "none"),                       # not ours (no record): no drain
    ([], status(4), {PF: False}, IOMMU, "drain"),                    # leaves the spec: reset drains
    ([], status(4), {PF: True}, IOMMU, "none"),                      # externally managed: not reset
    ([spec(4, device_type="vfio-pci")], status(0), {}, (), "reboot"),  # vfio-pci without IOMMU args
    ([spec(4, device_type="vfio-pci")], status(0), {}, IOMMU, "none"),
    ([spec(4, mtu=9000)], status(4), {PF: False}, IOMMU, "drain"),   # MTU up on a configured PF
])
def test_decision_levels(specs: list[dict[str, Any]], stat: dict[str, Any], configured: dict[str, bool],
                         cmdline: tuple[str, ...], level: str) -> None:
    facts = HostFacts(configured=configured, cmdline=frozenset(cmdline), iommu_args=IOMMU)
    assert decide(specs, [stat], facts).level == level


def test_reboot_names_the_missing_arguments_and_implies_a_drain() -> None:
    facts = HostFacts(cmdline=frozenset({"iommu=pt"}), recorded_kargs=frozenset({"pci=realloc"}), iommu_args=IOMMU)
    result = decide([spec(4, device_type="vfio-pci")], [status(0)], facts)
    assert result.missing_kernel_args == ("intel_iommu=on", "pci=realloc")
    assert result.drain and result.reboot


def test_host_facts_json_round_trip_and_bad_input() -> None:
    facts = HostFacts(configured={PF: True}, cmdline=frozenset({"ro", "iommu=pt"}),
                      recorded_kargs=frozenset({"pci=realloc"}), iommu_args=IOMMU)
    assert HostFacts.from_json(facts.to_json()) == facts
    with pytest.raises(ValueError):
        HostFacts.from_json("[1]")
