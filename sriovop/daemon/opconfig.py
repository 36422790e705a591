"""SriovOperatorConfig `default`, followed live: log level, disableDrain and feature gates.

A deleted or unreadable config keeps the last values: a daemon must not start draining (or stop) because
the operator's config blinked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from sriovop.daemon.settings import LiveConfig

log = structlog.get_logger(__name__)

#: `spec.logLevel` (0 basic .. 2 everything) → level names, as the operator maps it.
LOG_LEVELS = {0: "info", 1: "debug", 2: "debug"}


class OperatorConfigFollower:
    """An informer event handler updating `live`; `on_change()` runs when disableDrain changed (a
    waiting drain handshake may now proceed)."""

    def __init__(self, live: LiveConfig, *, set_log_level: Callable[[str], None] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        self.live = live
        self.set_log_level = set_log_level
        self.on_change = on_change

    def apply(self, config: Mapping[str, Any]) -> None:
        spec = config.get("spec") or {}
        changed = False
        with self.live.lock:
            disable = bool(spec.get("disableDrain", False))
            if disable != self.live.disable_drain:
                self.live.disable_drain = disable
                changed = True
                log.info("disableDrain changed", disableDrain=disable)
            gates = {str(k): bool(v) for k, v in (spec.get("featureGates") or {}).items()}
            if gates != self.live.feature_gates:
                self.live.feature_gates = gates
                log.info("feature gates changed", featureGates=gates)
            raw = spec.get("logLevel")
            level = self.live.log_level
            if raw is not None:
                try:
                    level = LOG_LEVELS.get(int(raw), "debug")
                except (TypeError, ValueError):
                    log.warning("ignoring a logLevel that is not an integer", logLevel=raw)
            level_changed = level != self.live.log_level
            self.live.log_level = level
        if level_changed and self.set_log_level is not None:
            self.set_log_level(level)
            log.info("log level changed", new_level=level, logLevel=raw)
        if changed and self.on_change is not None:
            self.on_change()

    # informer handler protocol
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.apply(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.apply(new)

    def on_delete(self, obj: Any) -> None:
        log.warning("SriovOperatorConfig default was deleted; keeping its last values")
