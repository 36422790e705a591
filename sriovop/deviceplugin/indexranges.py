"""The `NAME#0,2-7,9` suffix of `pfNames` and `rootDevices` entries: which VF indexes (virtfnN) qualify.

Upstream parses the suffix each time it filters and silently drops a device when the suffix is malformed;
here it is parsed once, when the config is read, so a typo is an error naming the entry.
"""

from __future__ import annotations

from dataclasses import dataclass


class RangeError(ValueError):
    """A malformed `#...` suffix (the message says what is wrong)."""


@dataclass(frozen=True)
class IndexedName:
    """A PF name (or PF PCI address) and, if the entry had a `#` suffix, the VF indexes it allows."""

    name: str
    indexes: frozenset[int] | None = None

    def matches(self, name: str, index: int | None) -> bool:
        if not name or self.name.lower() != name.lower():
            return False
        return self.indexes is None or (index is not None and index in self.indexes)


def parse_indexed(entry: str) -> IndexedName:
    name, sep, suffix = entry.partition("#")
    if not sep:
        return IndexedName(name)
    if "#" in suffix:
        raise RangeError(f"{entry!r}: more than one '#'")
    indexes: set[int] = set()
    for part in suffix.split(","):
        first, dash, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if dash else lo
        except ValueError:
            raise RangeError(f"{entry!r}: {part!r} is not an index or a first-last range") from None
        if lo < 0 or hi < lo:
            raise RangeError(f"{entry!r}: range {part!r} is empty or negative")
        indexes.update(range(lo, hi + 1))
    return IndexedName(name, frozenset(indexes))
