"""NIC models the simulated host can materialise (ids, drivers, VF limits as on real hardware)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NicModel:
    key: str
    description: str
    vendor: str
    pf_device: str
    vf_device: str
    pf_driver: str
    vf_driver: str
    totalvfs: int
    ports: int = 2
    speed: int = 25000
    #: Offset of the first VF's routing id from its PF's (PCI SR-IOV capability "First VF Offset").
    vf_offset: int = 0x10
    max_mtu: int = 9702
    #: devlink eswitch mode switchdev is supported (mlx5, ice); others answer EOPNOTSUPP.
    switchdev: bool = False
    #: ethtool hw-tc-offload can be switched on.
    tc_offload: bool = True


MODELS: dict[str, NicModel] = {
    m.key: m
    for m in (
        NicModel("xxv710", "Intel XXV710 25G SFP28", "8086", "158b", "154c", "i40e", "iavf", 64),
        NicModel("e810", "Intel E810-XXVDA4", "8086", "1593", "1889", "ice", "iavf", 128, ports=2,
                 switchdev=True),
        NicModel("cx6dx", "Mellanox ConnectX-6 Dx", "15b3", "101d", "101e", "mlx5_core", "mlx5_core", 127,
                 speed=100000, max_mtu=9978, switchdev=True),
        NicModel("82576", "Intel 82576 (igb)", "8086", "10c9", "10ca", "igb", "igbvf", 7, speed=1000,
                 max_mtu=9216, tc_offload=False),
        NicModel("virtio", "Red Hat virtio-net (unsupported SR-IOV model for dev-mode tests)", "1af4", "1041",
                 "1041", "virtio-pci", "virtio-pci", 0, ports=1, speed=10000, tc_offload=False),
    )
}

#: Drivers whose bound devices get a kernel netdev.
NETDEV_DRIVERS = frozenset({"i40e", "iavf", "ice", "mlx5_core", "igb", "igbvf", "ixgbe", "ixgbevf"})
