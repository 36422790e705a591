"""Supported-NIC table used to filter discovery.

The daemon loads the real table from the `supported-nic-ids` ConfigMap (values `"<vendor> <pf> <vf>"`)
and passes it in; `DEFAULT_SUPPORTED_NICS` is a private fallback (a subset of upstream's defaults) so
the host layer stands alone in tests and the demo.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class NicId:
    vendor: str
    pf_device: str
    vf_device: str


_DEFAULTS = {
    "Intel_i40e_XXV710": "8086 158a 154c",
    "Intel_i40e_25G_SFP28": "8086 158b 154c",
    "Intel_i40e_10G_X710_SFP": "8086 1572 154c",
    "Intel_i40e_40G_XL710_QSFP": "8086 1583 154c",
    "Intel_ixgbe_10G_X550": "8086 1563 1565",
    "Intel_ixgbe_82576": "8086 10c9 10ca",
    "Intel_ice_Columbiaville_E810-CQDA2_2CQDA2": "8086 1592 1889",
    "Intel_ice_Columbiaville_E810-XXVDA4": "8086 1593 1889",
    "Intel_ice_Columbiaville_E810-XXVDA2": "8086 159b 1889",
    "Nvidia_mlx5_ConnectX-4": "15b3 1013 1014",
    "Nvidia_mlx5_ConnectX-4LX": "15b3 1015 1016",
    "Nvidia_mlx5_ConnectX-5": "15b3 1017 1018",
    "Nvidia_mlx5_ConnectX-5_Ex": "15b3 1019 101a",
    "Nvidia_mlx5_ConnectX-6": "15b3 101b 101c",
    "Nvidia_mlx5_ConnectX-6_Dx": "15b3 101d 101e",
    "Nvidia_mlx5_ConnectX-6_Lx": "15b3 101f 101e",
    "Nvidia_mlx5_ConnectX-7": "15b3 1021 101e",
    "Nvidia_mlx5_MT42822_BlueField-2": "15b3 a2d6 101e",
    "Nvidia_mlx5_MT43244_BlueField-3": "15b3 a2dc 101e",
    "Broadcom_bnxt_BCM57414_2x25G": "14e4 16d7 16dc",
    "Qlogic_qede_QL45000_50G": "1077 1654 1664",
    "Red_Hat_Virtio_network_device": "1af4 1000 1000",
    "Red_Hat_Virtio_1_0_network_device": "1af4 1041 1041",
    "Amazon_ENA": "1d0f ec20 ec20",
    "Marvell_OCTEON_TX2_CN96XX": "177d b200 b203",
}


def parse_nic_ids(data: Mapping[str, str]) -> list[NicId]:
    """Parse ConfigMap data; a malformed value is an error naming its key (it would hide a NIC)."""
    out: list[NicId] = []
    for key, value in data.items():
        parts = value.split()
        if len(parts) != 3 or not all(_is_hex(p) for p in parts):
            raise ValueError(f"supported-nic-ids[{key}]: {value!r} is not '<vendor> <pf> <vf>' in hex")
        out.append(NicId(*(p.lower() for p in parts)))
    return out


def _is_hex(s: str) -> bool:
    try:
        int(s, 16)
    except ValueError:
        return False
    return True


class SupportedNics:
    def __init__(self, ids: Iterable[NicId]) -> None:
        self.ids = list(ids)
        self._pf = {(i.vendor, i.pf_device) for i in self.ids}

    @classmethod
    def default(cls) -> SupportedNics:
        return cls(parse_nic_ids(_DEFAULTS))

    def is_supported(self, vendor: str, device: str) -> bool:
        return (vendor.lower(), device.lower()) in self._pf

    def vf_device(self, vendor: str, pf_device: str) -> str | None:
        for i in self.ids:
            if (i.vendor, i.pf_device) == (vendor.lower(), pf_device.lower()):
                return i.vf_device
        return None
