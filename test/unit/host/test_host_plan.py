"""NeedToUpdateSriov and the configure/reset split, as pure functions over NodeState dicts."""

from __future__ import annotations

import pytest

from sriovop.host.errors import ValidationError
from sriovop.host.plan import (
    group_for,
    make_plan,
    need_to_update_sriov,
    needs_vfio,
    parse_vf_range,
    validate_spec_interfaces,
)

PF = "0000:18:00.0"


def status(**kw: object) -> dict:
    base: dict = {"pciAddress": PF, "name": "ens1f0", "mtu": 1500, "numVfs": 2, "linkAdminState": "up",
                  "eSwitchMode": "legacy",
                  "Vfs": [{"pciAddress": "0000:18:02.0", "vfID": 0, "driver": "iavf", "mtu": 1500},
                          {"pciAddress": "0000:18:02.1", "vfID": 1, "driver": "vfio-pci"}]}
    base.update(kw)
    return base


def spec(**kw: object) -> dict:
    base: dict = {"pciAddress": PF, "numVfs": 2, "vfGroups": [
        {"deviceType": "netdevice", "vfRange": "0-0"}, {"deviceType": "vfio-pci", "vfRange": "1-1"}]}
    base.update(kw)
    return base


def test_matching_host_needs_nothing() -> None:
    assert not need_to_update_sriov(spec(), status())


@pytest.mark.parametrize(
    ("spec_kw", "status_kw"),
    [
        ({"mtu": 9000}, {}),
        ({"numVfs": 4}, {}),
        ({"eSwitchMode": "switchdev"}, {}),
        ({}, {"linkAdminState": "down"}),
        ({"externallyManaged": True}, {}),
        ({}, {"Vfs": [{"pciAddress": "a", "vfID": 0, "driver": ""}, {"pciAddress": "b", "vfID": 1,
                                                                       "driver": "vfio-pci"}]}),
        ({}, {"Vfs": [{"pciAddress": "a", "vfID": 0, "driver": "vfio-pci"}, {"pciAddress": "b", "vfID": 1,
                                                                               "driver": "vfio-pci"}]}),
        ({}, {"Vfs": [{"pciAddress": "a", "vfID": 0, "driver": "iavf"}, {"pciAddress": "b", "vfID": 1,
                                                                           "driver": "iavf"}]}),
        ({"vfGroups": [{"deviceType": "netdevice", "vfRange": "0-0", "mtu": 9000}]}, {}),
    ],
)
def test_each_reason_to_update(spec_kw: dict, status_kw: dict) -> None:
    assert need_to_update_sriov(spec(**spec_kw), status(**status_kw))


def test_lower_spec_mtu_and_vfs_outside_groups_are_ignored() -> None:
    assert not need_to_update_sriov(spec(mtu=1000), status())
    st = status(Vfs=[{"pciAddress": "a", "vfID": 0, "driver": "iavf"}, {"pciAddress": "b", "vfID": 1}])
    assert not need_to_update_sriov(spec(vfGroups=[{"deviceType": "netdevice", "vfRange": "0-0"}]), st)


def test_plan_partitions() -> None:
    other = {"pciAddress": "0000:28:00.0", "numVfs": 0}
    missing = {"pciAddress": "0000:99:00.0", "numVfs": 1}
    plan = make_plan([spec(numVfs=4), missing], [status(), other])
    assert [s["pciAddress"] for s, _ in plan.configure] == [PF]
    assert plan.reset == [other] and plan.missing == [missing] and not plan.empty
    plan = make_plan([spec()], [status()])
    assert plan.empty and [s["pciAddress"] for s, _ in plan.unchanged] == [PF]


def test_vf_ranges() -> None:
    assert parse_vf_range("0-7") == (0, 7) and parse_vf_range("3") == (3, 3)
    for bad in ("7-0", "a-b", "1-2-3", "-1", ""):
        with pytest.raises(ValidationError, match="vfRange"):
            parse_vf_range(bad)
    assert group_for(spec(), 1) == {"deviceType": "vfio-pci", "vfRange": "1-1"}
    assert group_for(spec(), 5) is None


def test_needs_vfio() -> None:
    assert needs_vfio([spec()])
    assert not needs_vfio([spec(vfGroups=[{"deviceType": "netdevice", "vfRange": "0-1"}]), {"pciAddress": "x"}])


@pytest.mark.parametrize(
    ("iface", "message"),
    [
        ({"numVfs": 2}, r"spec.interfaces\[0\].pciAddress: required"),
        ({"pciAddress": PF, "numVfs": -1}, r"\(pf 0000:18:00.0\).numVfs: -1 is not an integer >= 0"),
        ({"pciAddress": PF, "numVfs": "4"}, r"numVfs: '4' is not an integer"),
        ({"pciAddress": PF, "numVfs": 2, "vfGroups": [{"vfRange": "0-2"}]}, r"vfRange: .0-2. reaches past"),
        ({"pciAddress": PF, "numVfs": 2, "vfGroups": [{"vfRange": "1-0"}]}, r"vfGroups\[0\].vfRange: '1-0' must"),
        ({"pciAddress": PF, "numVfs": 2, "vfGroups": [{"vfRange": "0-1", "deviceType": "dpdk"}]}, r"deviceType"),
        ({"pciAddress": PF, "numVfs": 2, "vfGroups": [{"vfRange": "0-1", "vdpaType": "virtio"}]}, r"vDPA"),
    ],
)
def test_spec_validation_names_the_field(iface: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        validate_spec_interfaces([iface])


def test_duplicate_pf_in_spec() -> None:
    with pytest.raises(ValidationError, match=r"interfaces\[1\].pciAddress: 0000:18:00.0 appears twice"):
        validate_spec_interfaces([spec(), spec()])
