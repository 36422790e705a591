"""The NodeState generation the daemon last applied, kept on the host.

Upstream keeps it in memory, so every daemon restart re-runs a full apply pass (and may request a drain)
for a spec the host already has. Here it is a small file under the operator state dir, written only
after an apply pass succeeded, so: a restart with an unchanged spec does nothing; a daemon killed
mid-apply has not recorded the generation and applies it again. The NodeState's uid is kept with it,
because a NodeState deleted and created again starts at generation 1 once more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sriovop.host.records import atomic_write_json

FILE_NAME = "applied-generation.json"


@dataclass(frozen=True)
class Applied:
    uid: str
    generation: int


class AppliedGeneration:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / "daemon" / FILE_NAME

    def load(self) -> Applied | None:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        try:
            return Applied(str(data["uid"]), int(data["generation"]))
        except (KeyError, TypeError, ValueError):
            return None

    def is_applied(self, uid: str, generation: int) -> bool:
        applied = self.load()
        return applied is not None and applied.uid == uid and applied.generation == generation

    def save(self, uid: str, generation: int) -> None:
        atomic_write_json(self.path, {"uid": uid, "generation": generation})

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
