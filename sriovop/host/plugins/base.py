"""The plugin contract the daemon's reconcile loop drives (upstream's VendorPlugin).

`on_node_state_change` answers "drain? reboot?" for a new NodeState before anything is touched;
`apply` does the work after the drain handshake; `check_status_changes` detects host drift when the
generation did not change. NodeStates are plain dicts with `spec` and a freshly discovered `status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Decision:
    drain: bool = False
    reboot: bool = False

    def __or__(self, other: Decision) -> Decision:
        # A reboot always implies a drain.
        return Decision(self.drain or other.drain or self.reboot or other.reboot, self.reboot or other.reboot)


class Plugin(Protocol):
    name: str

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision: ...

    def check_status_changes(self, node_state: dict[str, Any]) -> bool: ...

    def apply(self) -> None: ...


def spec_interfaces(node_state: dict[str, Any]) -> list[dict[str, Any]]:
    return list((node_state.get("spec") or {}).get("interfaces") or [])


def status_interfaces(node_state: dict[str, Any]) -> list[dict[str, Any]]:
    return list((node_state.get("status") or {}).get("interfaces") or [])
