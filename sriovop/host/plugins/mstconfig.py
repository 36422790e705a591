"""The `mstconfig` command (Mellanox firmware tool): query and set non-volatile firmware settings.

Settings apply at the next boot, which is why every change means a reboot.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

_VALUE = re.compile(r"^\S+\((\d+)\)$")


class MstconfigError(RuntimeError):
    pass


def numeric(text: dict[str, str]) -> dict[str, int]:
    values: dict[str, int] = {}
    for key, raw in text.items():
        m = _VALUE.match(raw)
        try:
            values[key] = int(m.group(1)) if m else int(raw)
        except ValueError:
            continue
    return values


#: A BlueField in DPU mode: its Arm cores own the eswitch (upstream's GetMellanoxBlueFieldMode).
DPU_MODE = {"INTERNAL_CPU_PAGE_SUPPLIER": "ECPF", "INTERNAL_CPU_ESWITCH_MANAGER": "ECPF",
            "INTERNAL_CPU_IB_VPORT0": "ECPF", "INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED",
            "INTERNAL_CPU_MODEL": "EMBEDDED_CPU"}


def is_bluefield_dpu(text: dict[str, str]) -> bool:
    return all(want in text.get(key, "") for key, want in DPU_MODE.items())


@dataclass
class Mstconfig:
    binary: str = "mstconfig"
    timeout: float = 60.0

    def _run(self, args: list[str]) -> str:
        try:
            done = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=self.timeout)
        except FileNotFoundError as e:
            raise MstconfigError(f"{self.binary} not found on PATH (install mstflint)") from e
        except subprocess.TimeoutExpired as e:
            raise MstconfigError(f"{self.binary} {' '.join(args)} timed out") from e
        if done.returncode != 0:
            raise MstconfigError(f"{self.binary} {' '.join(args)} failed ({done.returncode}): "
                                 f"{(done.stderr or done.stdout).strip()[:300]}")
        return done.stdout

    def query_text(self, pci: str) -> dict[str, str]:
        """`mstconfig -d <pci> q` → {"SRIOV_EN": "True(1)", "INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)", ...}
        (the Next Boot column)."""
        out = self._run(["-d", pci, "q"])
        values: dict[str, str] = {}
        in_config = False
        for line in out.splitlines():
            if line.strip().startswith("Configurations:"):
                in_config = True
                continue
            parts = line.split()
            if in_config and len(parts) >= 2 and parts[0].isupper():
                values[parts[0]] = parts[-1]
        return values

    def query(self, pci: str) -> dict[str, int]:
        """`mstconfig -d <pci> q` → {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": 2, ...}."""
        return numeric(self.query_text(pci))

    def set(self, pci: str, settings: Mapping[str, int]) -> None:
        args = [f"{k}={v}" for k, v in sorted(settings.items())]
        self._run(["-y", "-d", pci, "set", *args])


@dataclass
class Mstfwreset(Mstconfig):
    """`mstfwreset`: reset the NIC so new firmware settings load without waiting for the reboot
    (upstream's mellanoxFirmwareReset gate: `-d <pci> --skip_driver -l 3 -y reset`)."""

    binary: str = "mstfwreset"
    timeout: float = 300.0

    def reset(self, pci: str) -> None:
        self._run(["-d", pci, "--skip_driver", "-l", "3", "-y", "reset"])
