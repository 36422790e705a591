"""Files the daemon keeps on the host between runs.

- PF record `<state>/pci/<pci>`: the PF spec last applied; its presence means "configured by the
  operator" (reset and drain decisions depend on it), and it carries `externallyManaged`.
- Checkpoint: the NIC state seen at the first start (original MTU, eSwitch mode), written once and
  kept, so resetting a PF restores what the host had before the operator touched it.
Writes are atomic (temp file + rename): a daemon killed mid-write must not leave a half JSON file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sriovop.host.paths import HostPaths


def atomic_write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class PfRecords:
    def __init__(self, paths: HostPaths) -> None:
        self.paths = paths

    def save(self, pci: str, spec: dict[str, Any]) -> None:
        atomic_write_json(self.paths.pci_record(pci), spec)

    def load(self, pci: str) -> dict[str, Any] | None:
        data = _read_json(self.paths.pci_record(pci))
        return data if isinstance(data, dict) else None

    def exists(self, pci: str) -> bool:
        return self.paths.pci_record(pci).exists()

    def remove(self, pci: str) -> None:
        try:
            self.paths.pci_record(pci).unlink()
        except FileNotFoundError:
            pass

    def all(self) -> list[str]:
        try:
            return sorted(p.name for p in self.paths.pci_records.iterdir() if not p.name.startswith("."))
        except OSError:
            return []

    def clear(self) -> None:
        for pci in self.all():
            self.remove(pci)

    def externally_managed(self, pci: str) -> bool:
        rec = self.load(pci)
        return bool(rec and rec.get("externallyManaged"))


class Checkpoint:
    def __init__(self, paths: HostPaths) -> None:
        self.paths = paths

    def ensure(self, interfaces: list[dict[str, Any]]) -> bool:
        """Write the initial state unless one exists; True when written now."""
        if self.paths.checkpoint.exists():
            return False
        atomic_write_json(self.paths.checkpoint, {"interfaces": interfaces})
        return True

    def interfaces(self) -> list[dict[str, Any]]:
        data = _read_json(self.paths.checkpoint)
        found = data.get("interfaces") if isinstance(data, dict) else None
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []

    def interface(self, pci: str) -> dict[str, Any] | None:
        data = _read_json(self.paths.checkpoint)
        if not isinstance(data, dict):
            return None
        for iface in data.get("interfaces", []):
            if isinstance(iface, dict) and iface.get("pciAddress") == pci:
                return iface
        return None
