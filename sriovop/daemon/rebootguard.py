"""The reboot guard: never reboot a node in a loop.

Upstream reboots whenever a wanted kernel argument is missing from /proc/cmdline; where the boot loader
does not use the edited configuration (Ubuntu, #1016) that is every pass, forever. Here each reboot the
daemon asks for is counted, with its reasons and the boot it was asked from (`boot_id`), in
`<state dir>/daemon/reboot-guard.json` on the host, so the count survives the reboot itself. When the
same reasons are still there after `limit` reboots, the pass fails instead (NodeState `Failed` naming
them) and no further reboot is asked for until the reasons change: the administrator fixes the boot
loader (and reboots), or changes the policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from sriovop.host.records import atomic_write_json

log = structlog.get_logger(__name__)

FILE_NAME = "reboot-guard.json"
DEFAULT_LIMIT = 2


@dataclass
class GuardState:
    reasons: list[str] = field(default_factory=list)
    reboots: int = 0
    #: The boot during which the last reboot was asked for.
    boot_id: str = ""


class RebootGuard:
    def __init__(self, state_dir: Path, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"reboot limit: must be at least 1, got {limit}")
        self.path = Path(state_dir) / "daemon" / FILE_NAME
        self.limit = limit

    def load(self) -> GuardState:
        try:
            data = json.loads(self.path.read_text())
            return GuardState([str(r) for r in data["reasons"]], int(data["reboots"]), str(data["boot_id"]))
        except (OSError, ValueError, KeyError, TypeError):
            return GuardState()

    def exhausted(self, reasons: list[str], boot_id: str) -> str | None:
        """The failure message when these reasons survived `limit` reboots; None when a reboot may go on."""
        state = self.load()
        if state.reasons != sorted(reasons) or state.reboots < self.limit:
            return None
        if state.boot_id == boot_id and boot_id:
            return None  # the last allowed reboot was asked for in this boot and has not happened yet
        return (f"still needed after {state.reboots} reboot{'s' if state.reboots != 1 else ''} "
                f"({'; '.join(state.reasons)}); not rebooting again: the boot loader does not apply the "
                f"boot configuration the daemon wrote. Fix it (or set the arguments) and reboot the node")

    def rebooting(self, reasons: list[str], boot_id: str) -> int:
        """Count a reboot about to be asked for (once per boot); returns the count."""
        state = self.load()
        if state.reasons != sorted(reasons):
            state = GuardState(sorted(reasons))
        if state.boot_id != boot_id or not boot_id:
            state.reboots += 1
            state.boot_id = boot_id
            atomic_write_json(self.path, {"reasons": state.reasons, "reboots": state.reboots,
                                          "boot_id": state.boot_id})
            log.warning("reboot counted", reboots=state.reboots, limit=self.limit, reasons=state.reasons)
        return state.reboots

    def clear(self) -> None:
        try:
            self.path.unlink()
            log.info("reboot guard cleared: nothing needs a reboot any more")
        except FileNotFoundError:
            pass
