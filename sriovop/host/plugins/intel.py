"""Intel NICs need nothing beyond the generic plugin (upstream's intel plugin is a no-op too)."""

from __future__ import annotations

from typing import Any

from sriovop.host.plugins.base import Decision

VENDOR = "8086"


class IntelPlugin:
    name = "intel_plugin"

    def on_node_state_change(self, node_state: dict[str, Any]) -> Decision:
        return Decision()

    def check_status_changes(self, node_state: dict[str, Any]) -> bool:
        return False

    def apply(self) -> None:
        return None
