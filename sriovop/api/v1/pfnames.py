"""`nicSelector.pfNames` entries (`ens1f0` or `ens1f0#0-3`) and VF index ranges (`"0-3"` in vfGroups).

Parsing follows upstream's rules (exactly one `#`, exactly one `-`, integer ends, end >= start) so
that the webhook accepts and rejects the same entries, but every error says which rule failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_INT = re.compile(r"\+?[0-9]+")


class PfNameError(ValueError):
    """A malformed pfNames entry or VF range; the message names the entry and the broken rule."""


def _parse_int(text: str, what: str, entry: str) -> int:
    if not _INT.fullmatch(text):
        raise PfNameError(f"pfNames entry {entry!r}: {what} of the VF range {text!r} is not a non-negative integer")
    return int(text)


def parse_vf_range(rng: str, entry: str | None = None) -> tuple[int, int]:
    """`"0-3"` -> `(0, 3)`; both ends inclusive. `entry` is only used to word errors."""
    where = entry if entry is not None else rng
    parts = rng.split("-")
    if len(parts) != 2:
        raise PfNameError(f"pfNames entry {where!r}: the VF range {rng!r} must be <first>-<last> with exactly one '-'")
    first = _parse_int(parts[0], "the first index", where)
    last = _parse_int(parts[1], "the last index", where)
    if last < first:
        raise PfNameError(f"pfNames entry {where!r}: the last VF index {last} is smaller than the first {first}")
    return first, last


def parse_pf_name(entry: str) -> tuple[str, int | None, int | None]:
    """`"ens1#0-3"` -> `("ens1", 0, 3)`; `"ens1"` -> `("ens1", None, None)`. Raises PfNameError."""
    if "#" not in entry:
        return entry, None, None
    parts = entry.split("#")
    if len(parts) != 2:
        raise PfNameError(f"pfNames entry {entry!r}: must contain at most one '#' (<name>#<first>-<last>)")
    first, last = parse_vf_range(parts[1], entry)
    return parts[0], first, last


def pf_name_only(entry: str) -> str:
    """The interface-name part of an entry, never raising (for matching; validation is separate)."""
    return entry.split("#", 1)[0]


def validate_pf_name(entry: str, num_vfs: int) -> None:
    """Upstream's static webhook check: the entry parses and its last VF index is below numVfs."""
    _, _first, last = parse_pf_name(entry)
    if last is not None and last >= num_vfs:
        raise PfNameError(
            f"pfNames entry {entry!r}: the last VF index {last} must be lower than numVfs {num_vfs} "
            f"(VF indexes run from 0 to numVfs-1)"
        )


def vf_ranges_overlap(a: tuple[int, int] | str, b: tuple[int, int] | str) -> bool:
    """Whether two inclusive VF index ranges share an index; strings are parsed like vfGroups' `vfRange`."""
    a0, a1 = parse_vf_range(a) if isinstance(a, str) else a
    b0, b1 = parse_vf_range(b) if isinstance(b, str) else b
    return a0 <= b1 and b0 <= a1


def index_in_range(index: int, rng: str) -> bool:
    """Whether a VF index falls in a `vfRange` string; a malformed range contains nothing (as upstream)."""
    try:
        first, last = parse_vf_range(rng)
    except PfNameError:
        return False
    return first <= index <= last


def find_pf_entry(pf_names: Iterable[str], names: Iterable[str]) -> str | None:
    """The first pfNames entry naming one of `names` (a PF's name and alt names), or None."""
    wanted = set(names)
    for entry in pf_names:
        if pf_name_only(entry) in wanted:
            return entry
    return None
