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

    def query(self, pci: str) -> dict[str, int]:
        """`mstconfig -d <pci> q` → {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": 2, ...}."""
        out = self._run(["-d", pci, "q"])
        values: dict[str, int] = {}
        in_config = False
        for line in out.splitlines():
            if line.strip().startswith("Configurations:"):
                in_config = True
                continue
            parts = line.split()
            if not in_config or len(parts) != 2:
                continue
            key, raw = parts
            m = _VALUE.match(raw)
            try:
                values[key] = int(m.group(1)) if m else int(raw)
            except ValueError:
                continue
        return values

    def set(self, pci: str, settings: Mapping[str, int]) -> None:
        args = [f"{k}={v}" for k, v in sorted(settings.items())]
        self._run(["-y", "-d", pci, "set", *args])
