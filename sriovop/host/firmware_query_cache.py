"""What `mstconfig q` reported per Mellanox card, kept for the rest of the boot.

Querying takes `mstconfig` a second or more per card (it reads the NIC's non-volatile configuration
through the PCI config space), and the daemon's periodic pass would otherwise query every card on every
pass only to learn what it already knows: the settings it reads (the Next Boot column) change only when
someone writes them, and the daemon is the one writing them. So a query is kept until either the host
boots again (its `boot_id` under the host root changes; a reboot is also when written settings load) or
the daemon writes firmware settings (`mstconfig set`, `mstfwreset`), after which the next pass reads
them again. Failed queries are not kept. Without a readable boot_id nothing is kept: a reboot could
not be told apart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sriovop.host.sysfs import read_str


class FirmwareQueryCache:
    def __init__(self, boot_id_path: Path) -> None:
        self.boot_id_path = boot_id_path
        #: (boot_id, PCI address of the card's first port) → the query's text settings
        self._entries: dict[tuple[str, str], dict[str, str]] = {}

    def get(self, pci: str, query: Callable[[str], dict[str, str]]) -> dict[str, str]:
        """The card's settings from this boot's cache, else from `query(pci)` (kept when it succeeds)."""
        boot = read_str(self.boot_id_path) or ""
        if not boot:
            return query(pci)
        key = (boot, pci)
        if key not in self._entries:
            # Entries of earlier boots are never asked for again.
            self._entries = {k: v for k, v in self._entries.items() if k[0] == boot}
            self._entries[key] = query(pci)
        return dict(self._entries[key])

    def invalidate(self) -> None:
        """Firmware settings were written: every card is queried again."""
        self._entries.clear()
