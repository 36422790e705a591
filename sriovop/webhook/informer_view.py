"""A `ClusterView` answered from informer caches (opt-in with `sriovop webhook --cache`).

It turns a validation into pure in-memory work (no API round trips), at the price of a short window
after a write in which the cache has not seen it yet: two overlapping policies created within a few
milliseconds of each other may both be admitted. The live view (the default) has no such window,
like upstream's webhook. NADs are always read live: a pod is usually created right after its network.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from sriovop.api.v1 import consts, kinds
from sriovop.api.v1.selectors import node_selector_matches as node_selected
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.runtime import kinds as core_kinds
from sriovop.runtime.cache import FuncHandler, InformerFactory
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.webhook.cluster_view import Obj, SupportedNicSource, configmap_fetcher

log = structlog.get_logger(__name__)


class InformerClusterView:
    def __init__(self, client: Client, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._factory = InformerFactory(client)
        self._nodes = self._factory.informer_for(core_kinds.NODE)
        self._states = self._factory.informer_for(kinds.SRIOV_NETWORK_NODE_STATE, namespace)
        self._policies = self._factory.informer_for(kinds.SRIOV_NETWORK_NODE_POLICY, namespace)
        self._nic_cm = self._factory.informer_for(
            core_kinds.CONFIG_MAP, namespace, field_selector={"metadata.name": consts.SUPPORTED_NIC_IDS_CONFIGMAP}
        )
        # The first load is live and must succeed; afterwards the watch pushes every change.
        self._nics = SupportedNicSource(configmap_fetcher(client, namespace), ttl=float("inf"))
        self._nic_cm.add_event_handler(FuncHandler(
            add=lambda obj, _initial: self._reload_nics(obj),
            update=lambda _old, new: self._reload_nics(new),
        ))
        self._stop = threading.Event()

    def _reload_nics(self, cm: Mapping[str, Any]) -> None:
        data = cm.get("data")
        try:
            self._nics.replace(data if isinstance(data, Mapping) else {})
            log.info("supported_nics_reloaded", models=len(self._nics.current()))
        except ValueError as exc:
            log.warning("supported_nics_rejected", error=str(exc))

    def start(self, timeout: float = 60.0) -> None:
        self._factory.start(self._stop)
        if not self._factory.wait_for_cache_sync(timeout):
            raise TimeoutError(f"the webhook's caches did not sync within {timeout}s")

    def stop(self) -> None:
        self._factory.shutdown()

    def nodes(self, selector: Mapping[str, str]) -> Sequence[Obj]:
        out = []
        for node in self._nodes.store.list():
            labels = (node.get("metadata") or {}).get("labels") or {}
            if node_selected(selector, labels):
                out.append(node)
        return out

    def node_states(self) -> Sequence[Obj]:
        return list(self._states.store.list())

    def policies(self) -> Sequence[Obj]:
        return list(self._policies.store.list())

    def network_attachment_definition(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._client.get(kinds.NETWORK_ATTACHMENT_DEFINITION, name, namespace)
        except NotFound:
            return None

    def supported_nics(self) -> SupportedNics:
        return self._nics.current()
