"""Where the injector gets its `ControlSwitches` for a request: a fixed set, or the watched ConfigMap.

Upstream re-reads `nri-control-switches` with a GET every 30 seconds. We follow it with an informer
(a field-selected watch on that one ConfigMap), so a request never waits on the API server and a change
applies as soon as the watch delivers it. A deleted ConfigMap brings the flags' values back, as
upstream's NotFound does.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from sriovop.runtime import kinds as core_kinds
from sriovop.runtime.cache import FuncHandler, InformerFactory
from sriovop.runtime.client import Client
from sriovop.webhook.control_switches import CONFIGMAP_NAME, ControlSwitches, parse_control_switches

log = structlog.get_logger(__name__)


class SwitchesSource(Protocol):
    def current(self) -> ControlSwitches:
        """The switches in force now (cheap: called on every pod admission)."""


class StaticSwitches:
    """Fixed switches: the flags alone, unit tests, tools that judge offline."""

    def __init__(self, switches: ControlSwitches | None = None) -> None:
        self._switches = switches or ControlSwitches()

    def current(self) -> ControlSwitches:
        return self._switches


class WatchedSwitches:
    """The flags (`initial`) overridden by the ConfigMap `nri-control-switches` in `namespace`."""

    def __init__(self, client: Client, namespace: str, initial: ControlSwitches) -> None:
        self._namespace = namespace
        self._initial = initial
        self._switches = initial
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._factory = InformerFactory(client)
        informer = self._factory.informer_for(core_kinds.CONFIG_MAP, namespace,
                                              field_selector={"metadata.name": CONFIGMAP_NAME})
        informer.add_event_handler(FuncHandler(
            add=lambda obj, _initial: self.load(obj),
            update=lambda _old, new: self.load(new),
            delete=lambda _obj: self.load(None),
        ))

    def load(self, configmap: Mapping[str, Any] | None) -> None:
        """Install what `configmap` (None: absent) says; each unusable field is logged and keeps its flag."""
        data = None
        if configmap is not None:
            raw = configmap.get("data")
            data = raw if isinstance(raw, Mapping) else {}
        switches, problems = parse_control_switches(data, self._initial, self._namespace)
        for problem in problems:
            log.warning("injector_control_switch_ignored", problem=problem)
        with self._lock:
            changed = switches != self._switches
            self._switches = switches
        if changed:
            log.info("injector_control_switches", hugepage_down_api=switches.hugepage_down_api,
                     honor_resources=switches.honor_resources, resource_name_keys=list(switches.resource_name_keys),
                     user_injections=sorted(switches.user_injections), configmap_present=configmap is not None)

    def current(self) -> ControlSwitches:
        with self._lock:
            return self._switches

    def start(self, timeout: float = 10.0) -> bool:
        """Start the watch and wait up to `timeout` for its first list; False when it has not synced
        (no permission, API server slow): the flags apply meanwhile and the watch keeps retrying, as
        upstream keeps its flags while it cannot read the ConfigMap."""
        self._factory.start(self._stop)
        synced = self._factory.wait_for_cache_sync(timeout)
        if not synced:
            log.warning("injector_control_switches_not_synced", configmap=f"{self._namespace}/{CONFIGMAP_NAME}",
                        timeout=timeout, using=str(self._initial))
        return synced

    def stop(self) -> None:
        self._factory.shutdown()
