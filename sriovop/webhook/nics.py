"""The supported-NIC table from the `supported-nic-ids` ConfigMap, as the webhook queries it.

Private to the webhook until `sriovop.api.v1` grows its shared parser; the semantics follow upstream:
each data value is "<vendor> <PF device> <VF device>" in hex without 0x, keys are free-form labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_HEX = re.compile(r"^[0-9a-fA-F]{1,4}$")


@dataclass(frozen=True, slots=True)
class NicModel:
    vendor: str
    pf_device: str
    vf_device: str


class SupportedNics:
    """Immutable lookup tables; a reload builds a new instance and swaps it in."""

    def __init__(self, models: Iterable[NicModel] = ()) -> None:
        self.models: tuple[NicModel, ...] = tuple(models)
        self._vendors = frozenset(m.vendor for m in self.models)
        self._pf = frozenset((m.vendor, m.pf_device) for m in self.models)
        self._pf_devices = frozenset(m.pf_device for m in self.models)
        self._vf = frozenset((m.vendor, m.vf_device) for m in self.models)

    @classmethod
    def from_configmap_data(cls, data: Mapping[str, object]) -> SupportedNics:
        models: list[NicModel] = []
        for key, value in sorted(data.items()):
            fields = value.split() if isinstance(value, str) else []
            if len(fields) != 3 or not all(_HEX.match(f) for f in fields):
                raise ValueError(
                    f"supported-nic-ids entry {key!r} = {value!r} is not '<vendor> <PF device> <VF device>' in hex"
                )
            vendor, pf, vf = (f.lower() for f in fields)
            models.append(NicModel(vendor, pf, vf))
        return cls(models)

    def __len__(self) -> int:
        return len(self.models)

    def is_supported_vendor(self, vendor: str) -> bool:
        return vendor.lower() in self._vendors

    def is_supported_model(self, vendor: str, pf_device: str) -> bool:
        return (vendor.lower(), pf_device.lower()) in self._pf

    def is_supported_device(self, pf_device: str) -> bool:
        return pf_device.lower() in self._pf_devices

    def is_vf_supported_model(self, vendor: str, vf_device: str) -> bool:
        return (vendor.lower(), vf_device.lower()) in self._vf
