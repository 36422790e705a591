"""The webhook's live view of the cluster; the protocol and the in-memory view are the policy
rules' (`sriovop.policyrules.view`) and are re-exported here for the webhook's callers."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol

import structlog

from sriovop.api.v1 import consts, kinds
from sriovop.api.v1.selectors import node_selector_matches as node_selected
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.policyrules.view import (
    ClusterView,
    StaticClusterView,
    label_index,
    label_pairs,
    object_labels,
    select_indexed,
)
from sriovop.runtime import kinds as core_kinds
from sriovop.runtime.errors import ApiError, NotFound

__all__ = ["ClientClusterView", "ClusterView", "StaticClusterView", "SupportedNicSource", "configmap_fetcher",
           "label_index", "label_pairs", "label_selector_string", "select_indexed"]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]


class Reader(Protocol):
    """The slice of `sriovop.runtime.client.Client` the live view uses."""

    def get(self, kind: Any, name: str, namespace: str | None = None) -> Obj: ...

    def list(
        self, kind: Any, namespace: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]: ...


_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def label_selector_string(selector: Mapping[str, str]) -> str | None:
    """`k=v,k2=v2`, or None when some key or value could not be sent to the server as a selector
    (the caller then lists everything and filters locally, so a odd selector is judged, not an error)."""
    parts = []
    for key, value in sorted(selector.items()):
        if len(key) > 316 or len(value) > 63 or not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
            return None
        parts.append(f"{key}={value}")
    return ",".join(parts)


class SupportedNicSource:
    """The `supported-nic-ids` ConfigMap, re-read when older than `ttl` seconds.

    A failed reload keeps the last good table (a webhook must not start rejecting every policy because
    one GET timed out); the first load must succeed, so a webhook never starts with an empty table.
    """

    def __init__(self, fetch: Callable[[], Mapping[str, object]], ttl: float = 10.0) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._lock = threading.Lock()
        self._table = SupportedNics.from_configmap_data(_strings(fetch()))
        self._loaded_at = time.monotonic()

    def current(self) -> SupportedNics:
        if time.monotonic() - self._loaded_at < self._ttl:
            return self._table
        with self._lock:
            if time.monotonic() - self._loaded_at >= self._ttl:
                try:
                    self._table = _lenient(self._fetch())
                except (ApiError, OSError, ValueError) as exc:
                    log.warning("supported_nics_reload_failed", error=str(exc), kept=len(self._table))
                self._loaded_at = time.monotonic()
        return self._table

    def replace(self, data: Mapping[str, object]) -> None:
        """Install a table pushed by a watch (the informer-backed view)."""
        table = _lenient(data)
        with self._lock:
            self._table = table
            self._loaded_at = time.monotonic()


def _strings(data: Mapping[str, object]) -> dict[str, str]:
    return {str(k): v if isinstance(v, str) else "" for k, v in data.items()}


def _lenient(data: Mapping[str, object]) -> SupportedNics:
    """After start a bad entry must not take the good ones away: skip it, say so, keep the rest."""
    table = SupportedNics.from_configmap_data(_strings(data), strict=False)
    for error in table.errors:
        log.warning("supported_nic_entry_skipped", error=error)
    return table


def configmap_fetcher(reader: Reader, namespace: str) -> Callable[[], Mapping[str, object]]:
    def fetch() -> Mapping[str, object]:
        try:
            cm = reader.get(core_kinds.CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, namespace)
        except NotFound:
            raise ValueError(
                f"ConfigMap {namespace}/{consts.SUPPORTED_NIC_IDS_CONFIGMAP} does not exist"
            ) from None
        data = cm.get("data")
        return data if isinstance(data, dict) else {}

    return fetch


class ClientClusterView:
    """Every read goes to the API server, like upstream's webhook: no cache to be stale after a write."""

    def __init__(self, reader: Reader, namespace: str, nics: SupportedNicSource | None = None) -> None:
        self._reader = reader
        self._namespace = namespace
        self._nics = nics or SupportedNicSource(configmap_fetcher(reader, namespace))

    def nodes(self, selector: Mapping[str, str]) -> Sequence[Obj]:
        found = self._reader.list(core_kinds.NODE, label_selector=label_selector_string(selector) or None)
        return [n for n in found if node_selected(selector, object_labels(n))]

    def node_states(self) -> Sequence[Obj]:
        return self._reader.list(kinds.SRIOV_NETWORK_NODE_STATE, namespace=self._namespace)

    def node_states_by_name(self) -> Mapping[str, Obj]:
        return {s["metadata"]["name"]: s for s in self.node_states()}

    def fresh(self) -> None:
        return None

    def policies(self) -> Sequence[Obj]:
        return self._reader.list(kinds.SRIOV_NETWORK_NODE_POLICY, namespace=self._namespace)

    def version(self) -> Hashable:
        return None  # every read is live: nothing to key a memo on

    def network_attachment_definition(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._reader.get(kinds.NETWORK_ATTACHMENT_DEFINITION, name, namespace)
        except NotFound:
            return None

    def supported_nics(self) -> SupportedNics:
        return self._nics.current()
