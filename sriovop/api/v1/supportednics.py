"""The supported-NIC table, read from the `supported-nic-ids` ConfigMap (`"<vendor> <PF id> <VF id>"`).

The operator, daemon and webhook all load it; keys are free-form labels and only the values matter.
`DEFAULT_SUPPORTED_NIC_IDS` is upstream's default list, for the deployment manifests and tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from sriovop.api.v1.consts import DEFAULT_OPERATOR_NAMESPACE, SUPPORTED_NIC_IDS_CONFIGMAP

#: Upstream's default `supported-nic-ids` ConfigMap data (label -> "vendor pf vf").
DEFAULT_SUPPORTED_NIC_IDS: Final[Mapping[str, str]] = MappingProxyType({
    "Intel_i40e_XXV710": "8086 158a 154c",
    "Intel_i40e_25G_SFP28": "8086 158b 154c",
    "Intel_i40e_10G_X710_SFP": "8086 1572 154c",
    "Intel_ixgbe_10G_X550": "8086 1563 1565",
    "Intel_ixgbe_82576": "8086 10c9 10ca",
    "Intel_i40e_X710_X557_AT_10G": "8086 1589 154c",
    "Intel_i40e_10G_X710_BACKPLANE": "8086 1581 154c",
    "Intel_i40e_10G_X710_BASE_T": "8086 15ff 154c",
    "Intel_i40e_XXV710_N3000": "8086 0d58 154c",
    "Intel_i40e_40G_XL710_QSFP": "8086 1583 154c",
    "Intel_ice_Columbiaville_E810-CQDA2_2CQDA2": "8086 1592 1889",
    "Intel_ice_Columbiaville_E810-XXVDA4": "8086 1593 1889",
    "Intel_ice_Columbiaville_E810-XXVDA2": "8086 159b 1889",
    "Intel_ice_Columbiaville_E810-XXV_BACKPLANE": "8086 1599 1889",
    "Intel_ice_Columbiaville_E810": "8086 1591 1889",
    "Intel_ice_Columbiapark_E823C": "8086 188a 1889",
    "Intel_ice_Columbiapark_E823L_SFP": "8086 124d 1889",
    "Intel_ice_Columbiapark_E823L_BACKPLANE": "8086 124c 1889",
    "Intel_ice_Columbiapark_E825C_BACKPLANE": "8086 579c 1889",
    "Intel_ice_Columbiapark_E825C_QSFP": "8086 579d 1889",
    "Intel_ice_Columbiapark_E825C_SFP": "8086 579e 1889",
    "Intel_ice_Connorsville_E830_QSFP": "8086 12d2 1889",
    "Intel_ice_Connorsville_E830_SFP": "8086 12d3 1889",
    "Nvidia_mlx5_ConnectX-4": "15b3 1013 1014",
    "Nvidia_mlx5_ConnectX-4LX": "15b3 1015 1016",
    "Nvidia_mlx5_ConnectX-5": "15b3 1017 1018",
    "Nvidia_mlx5_ConnectX-5_Ex": "15b3 1019 101a",
    "Nvidia_mlx5_ConnectX-6": "15b3 101b 101c",
    "Nvidia_mlx5_ConnectX-6_Dx": "15b3 101d 101e",
    "Nvidia_mlx5_ConnectX-6_Lx": "15b3 101f 101e",
    "Nvidia_mlx5_ConnectX-7": "15b3 1021 101e",
    "Nvidia_mlx5_ConnectX-8": "15b3 1023 101e",
    "Nvidia_mlx5_MT42822_BlueField-2_integrated_ConnectX-6_Dx": "15b3 a2d6 101e",
    "Nvidia_mlx5_MT43244_BlueField-3_integrated_ConnectX-7_Dx": "15b3 a2dc 101e",
    "Broadcom_bnxt_BCM57414_2x25G": "14e4 16d7 16dc",
    "Broadcom_bnxt_BCM75508_2x100G": "14e4 1750 1806",
    "Qlogic_qede_QL45000_50G": "1077 1654 1664",
    "Red_Hat_Virtio_network_device": "1af4 1000 1000",
    "Red_Hat_Virtio_1_0_network_device": "1af4 1041 1041",
    "Marvell_OCTEON_TX2_CN96XX": "177d b200 b203",
    "Marvell_OCTEON_TX2_CN98XX": "177d b100 b103",
    "Marvell_OCTEON_Fusion_CNF95XX": "177d b600 b603",
    "Marvell_OCTEON10_CN10XXX": "177d b900 b903",
    "Marvell_OCTEON_Fusion_CNF105XX": "177d ba00 ba03",
    "Amazon_Elastic_Network_Adapter": "1d0f ec20 ec20",
})

_HEX4 = re.compile(r"[0-9a-f]{4}")


class SupportedNicError(ValueError):
    """A malformed `supported-nic-ids` entry; the message names the key and the value."""


def normalize_id(value: str) -> str:
    """PCI ids as this table stores them: lower-case hex without `0x` (sysfs writes `0x158b`)."""
    value = value.strip().lower()
    return value[2:] if value.startswith("0x") else value


@dataclass(frozen=True, slots=True)
class NicModel:
    label: str
    vendor: str
    pf_device: str
    vf_device: str


def parse_entry(label: str, value: str) -> NicModel:
    fields = value.split()
    if len(fields) != 3:
        raise SupportedNicError(
            f"supported-nic-ids entry {label!r}: {value!r} must be '<vendor> <PF device id> <VF device id>' "
            f"(three hex ids separated by spaces), got {len(fields)} field(s)"
        )
    ids = [normalize_id(f) for f in fields]
    for what, v in zip(("vendor", "PF device id", "VF device id"), ids, strict=True):
        if not _HEX4.fullmatch(v):
            raise SupportedNicError(f"supported-nic-ids entry {label!r}: {what} {v!r} is not 4 hex digits")
    return NicModel(label, ids[0], ids[1], ids[2])


@dataclass(frozen=True)
class SupportedNics:
    """Lookups over the supported models; build with `from_configmap_data` or `default_supported_nics`."""

    models: tuple[NicModel, ...]
    #: Entries skipped by a non-strict parse, with the reason.
    errors: tuple[str, ...] = ()
    _pf: frozenset[tuple[str, str]] = field(init=False, repr=False)
    _vf: frozenset[tuple[str, str]] = field(init=False, repr=False)
    _vf_of_pf: Mapping[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pf", frozenset((m.vendor, m.pf_device) for m in self.models))
        object.__setattr__(self, "_vf", frozenset((m.vendor, m.vf_device) for m in self.models))
        vf_of_pf: dict[str, str] = {}
        for m in self.models:
            vf_of_pf.setdefault(m.pf_device, m.vf_device)
        object.__setattr__(self, "_vf_of_pf", vf_of_pf)

    @classmethod
    def from_configmap_data(cls, data: Mapping[str, str] | None, strict: bool = True) -> SupportedNics:
        """Parse ConfigMap `data`. strict: raise on the first bad entry; else skip it and record why."""
        models: list[NicModel] = []
        errors: list[str] = []
        for label in sorted(data or {}):
            try:
                models.append(parse_entry(label, (data or {})[label]))
            except SupportedNicError as exc:
                if strict:
                    raise
                errors.append(str(exc))
        return cls(tuple(models), tuple(errors))

    @classmethod
    def from_configmap(cls, configmap: Mapping[str, Any], strict: bool = True) -> SupportedNics:
        return cls.from_configmap_data(configmap.get("data") or {}, strict=strict)

    def is_supported_vendor(self, vendor: str) -> bool:
        v = normalize_id(vendor)
        return any(m.vendor == v for m in self.models)

    def is_supported_model(self, vendor: str, pf_device: str) -> bool:
        """Whether (vendor, PF device id) is a supported PF model."""
        return (normalize_id(vendor), normalize_id(pf_device)) in self._pf

    def is_supported_device(self, pf_device: str) -> bool:
        """Whether a PF device id is supported for some vendor (a nicSelector may give deviceID alone)."""
        return normalize_id(pf_device) in self._vf_of_pf

    def is_vf_supported_model(self, vendor: str, vf_device: str) -> bool:
        """Whether (vendor, VF device id) is a supported VF model (virtual platforms see VFs as PFs)."""
        return (normalize_id(vendor), normalize_id(vf_device)) in self._vf

    def vf_device_id(self, pf_device: str, vendor: str | None = None) -> str | None:
        """The VF device id of a PF device id (the device plugin selects VFs by it), or None.

        Upstream looks the PF id up regardless of vendor; pass `vendor` to be exact.
        """
        pf = normalize_id(pf_device)
        if vendor is None:
            return self._vf_of_pf.get(pf)
        v = normalize_id(vendor)
        return next((m.vf_device for m in self.models if m.vendor == v and m.pf_device == pf), None)

    def vf_device_ids(self) -> list[str]:
        """Sorted unique VF ids (the daemon's udev rule keeping NetworkManager off VFs uses `0x` + these)."""
        return sorted({m.vf_device for m in self.models})

    def __len__(self) -> int:
        return len(self.models)

    def __iter__(self) -> Iterator[NicModel]:
        return iter(self.models)


def default_supported_nics() -> SupportedNics:
    return SupportedNics.from_configmap_data(DEFAULT_SUPPORTED_NIC_IDS)


def supported_nic_ids_configmap(namespace: str = DEFAULT_OPERATOR_NAMESPACE,
                                extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `supported-nic-ids` ConfigMap object with the default list (plus `extra` entries)."""
    data = dict(DEFAULT_SUPPORTED_NIC_IDS)
    for label, value in (extra or {}).items():
        parse_entry(label, value)
        data[label] = value
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SUPPORTED_NIC_IDS_CONFIGMAP, "namespace": namespace},
        "data": data,
    }
