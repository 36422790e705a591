"""InfiniBand VF GUIDs: from the administrator's pool file, else random (upstream's pkg/host/internal/infiniband).

An IB VF needs a node and port GUID before its driver binds; the subnet manager and fabric policies
often key on them, so sites allocate them: `<root>/etc/sriov-operator/infiniband/guids` is a JSON list,
one entry per PF, the PF named by `pciAddress` or by its own GUID (`pfGuid`, the PF netdev's hardware
address), with either a list (`guids`, VF i gets the i-th) or a range (`rangeStart`..`rangeEnd`, VF i
gets start + i):

    [{"pciAddress": "0000:3b:00.0", "rangeStart": "00:00:00:00:00:00:01:00", "rangeEnd": "00:00:00:00:00:00:01:ff"},
     {"pfGuid": "00:11:22:33:44:55:66:77", "guids": ["02:00:00:00:00:00:00:01", "02:00:00:00:00:00:00:02"]}]

Without the file every VF gets a random locally administered unicast GUID, as upstream does. A malformed
file, or a PF whose pool is exhausted, is an error naming the entry and the reason (upstream: the same).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

GUID_CONFIG_FILE: Final = "etc/sriov-operator/infiniband/guids"


class GuidConfigError(ValueError):
    """The pool file cannot be used; the message names the entry and the field."""


def parse_guid(text: str) -> int:
    parts = str(text).split(":")
    if len(parts) != 8 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"{text!r} is not a GUID (eight colon-separated hex bytes, e.g. 00:11:22:33:44:55:66:77)")
    try:
        return int("".join(parts), 16)
    except ValueError:
        raise ValueError(f"{text!r} is not a GUID (eight colon-separated hex bytes)") from None


def format_guid(value: int) -> str:
    raw = value.to_bytes(8, "big")
    return ":".join(f"{b:02x}" for b in raw)


def random_guid() -> str:
    raw = bytearray(os.urandom(8))
    raw[0] = (raw[0] | 0x02) & ~0x01  # locally administered, unicast
    return format_guid(int.from_bytes(raw, "big"))


class GuidPool:
    """PF PCI address → its GUID list or (start, end) range."""

    def __init__(self, lists: dict[str, list[int]], ranges: dict[str, tuple[int, int]]) -> None:
        self.lists = lists
        self.ranges = ranges

    @classmethod
    def load(cls, root: Path, pf_by_guid: Mapping[str, str]) -> GuidPool | None:
        """None when there is no pool file; `pf_by_guid` maps a PF netdev's hardware address to its PCI address."""
        path = root / GUID_CONFIG_FILE
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise GuidConfigError(f"{path}: {exc}") from exc
        if not isinstance(raw, list):
            raise GuidConfigError(f"{path}: must be a JSON list of per-PF entries")
        lists: dict[str, list[int]] = {}
        ranges: dict[str, tuple[int, int]] = {}
        for i, entry in enumerate(raw):
            where = f"{path} entry {i}"
            if not isinstance(entry, dict):
                raise GuidConfigError(f"{where}: must be an object")
            pci = _pf_of(entry, pf_by_guid, where)
            guids, start, end = entry.get("guids") or [], entry.get("rangeStart"), entry.get("rangeEnd")
            try:
                if guids and (start or end):
                    raise GuidConfigError(f"{where}: either guids or rangeStart/rangeEnd, not both")
                if bool(start) != bool(end):
                    raise GuidConfigError(f"{where}: rangeStart and rangeEnd go together")
                if guids:
                    if not isinstance(guids, list):
                        raise GuidConfigError(f"{where}: guids must be a list")
                    lists[pci] = [parse_guid(g) for g in guids]
                elif start:
                    first, last = parse_guid(str(start)), parse_guid(str(end))
                    if last <= first:
                        raise GuidConfigError(f"{where}: rangeEnd must be above rangeStart")
                    ranges[pci] = (first, last)
                else:
                    raise GuidConfigError(f"{where}: needs guids or rangeStart/rangeEnd")
            except GuidConfigError:
                raise
            except ValueError as exc:
                raise GuidConfigError(f"{where}: {exc}") from None
        return cls(lists, ranges)

    def guid_for(self, pf_pci: str, vf: int) -> str:
        if pf_pci in self.lists:
            pool = self.lists[pf_pci]
            if vf >= len(pool):
                raise GuidConfigError(f"GUID pool of PF {pf_pci} is exhausted: VF {vf}, {len(pool)} GUIDs in "
                                      f"{GUID_CONFIG_FILE}")
            return format_guid(pool[vf])
        if pf_pci in self.ranges:
            first, last = self.ranges[pf_pci]
            if first + vf > last:
                raise GuidConfigError(f"GUID range of PF {pf_pci} is exhausted at VF {vf} ({GUID_CONFIG_FILE})")
            return format_guid(first + vf)
        raise GuidConfigError(f"no GUID pool for PF {pf_pci} in {GUID_CONFIG_FILE}")


def _pf_of(entry: Mapping[str, Any], pf_by_guid: Mapping[str, str], where: str) -> str:
    pci, pf_guid = entry.get("pciAddress"), entry.get("pfGuid")
    if pci and pf_guid:
        raise GuidConfigError(f"{where}: either pciAddress or pfGuid, not both")
    if pci:
        return str(pci)
    if pf_guid:
        found = pf_by_guid.get(str(pf_guid).lower())
        if found is None:
            raise GuidConfigError(f"{where}: no PF has GUID {pf_guid}")
        return found
    raise GuidConfigError(f"{where}: needs pciAddress or pfGuid")


def vf_guid(pool: GuidPool | None, pf_pci: str, vf: int) -> str:
    """The GUID VF `vf` of PF `pf_pci` gets: from the pool when there is one, else random."""
    return pool.guid_for(pf_pci, vf) if pool is not None else random_guid()
