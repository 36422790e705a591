"""A `ClusterView` answered from informer caches: the webhook's default (`--no-cache` reads live).

It turns a validation into in-memory work: one LIST of one item per cached kind and judgement
(shared by concurrent requests) and index lookups, instead of listing every Node, NodeState and
policy per request (seconds at 5,000 nodes; even the 200 peer policies alone are a 190 kB LIST whose
decoding and parsing cost more than the whole judgement). `fresh()` is the read-your-writes barrier
of `sriovop.webhook.freshness`: a policy created right after a NodeState, a Node's labels or a peer
policy changed is judged on the new state (exactly for creates and deletes, within that barrier's
documented settle window for updates; `--no-cache` reads everything live). Nodes are indexed by
`key=value` label, NodeStates by name; peer policies are the cache's frozen objects, so their parsed
form is memoised until they change. NADs are read live: a pod is usually created right after its
network.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import structlog

from sriovop.api.v1 import consts, kinds
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.policyrules.selection_memo import SelectionMemo
from sriovop.policyrules.view import VIEW_SERIALS
from sriovop.runtime import kinds as core_kinds
from sriovop.runtime.cache import FuncHandler, InformerFactory
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound, ServerError
from sriovop.webhook.cluster_view import Obj, SupportedNicSource, configmap_fetcher, label_pairs, select_indexed
from sriovop.webhook.freshness import FreshnessBarrier, KindRead, ServerState

log = structlog.get_logger(__name__)


LABEL_INDEX = "labels"
#: Defaults of `sriovop webhook --cache-settle / --cache-timeout` (seconds).
DEFAULT_SETTLE = 0.005
DEFAULT_BARRIER_TIMEOUT = 5.0


def kind_read(client: Client, kind: Any, namespace: str | None) -> KindRead:
    """The barrier's read of `kind`: a resourceVersion at or after the API server's current one (`at`
    None) or at or after `at`, and the kind's count there, through a LIST of at most one item answered
    once that kind's watch cache has caught up. Should the cache not catch up with `at` within the
    server's wait, a consistent LIST instead (kube-apiserver's own fallback for consistent reads)."""

    def read(at: str | None) -> ServerState:
        try:
            page = client.list_page(kind, namespace, limit=1, resource_version=at,
                                    resource_version_match="NotOlderThan" if at else None)
        except ServerError as exc:
            # The 504 a watch cache answers when it did not reach `at` in time.
            if at is None or exc.code != 504 or not exc.resource_version_too_large:
                raise
            log.info("freshness_read_fell_back", kind=kind.kind, resource_version=at, error=str(exc))
            page = client.list_page(kind, namespace, limit=1)
        return ServerState(page.resource_version, page.total())

    return read


class _StatesByName(Mapping[str, Obj]):
    """NodeStates of one namespace keyed by name, read straight from the informer's store."""

    def __init__(self, store: Any, namespace: str) -> None:
        self._store = store
        self._prefix = f"{namespace}/"

    def __getitem__(self, name: str) -> Obj:
        obj = self._store.get_by_key(self._prefix + name)
        if obj is None:
            raise KeyError(name)
        return obj

    def __iter__(self) -> Iterator[str]:
        return (key.split("/", 1)[1] for key in self._store.list_keys())

    def __len__(self) -> int:
        return len(self._store)


class InformerClusterView:
    def __init__(self, client: Client, namespace: str, settle: float = DEFAULT_SETTLE,
                 barrier_timeout: float = DEFAULT_BARRIER_TIMEOUT) -> None:
        self._client = client
        self._namespace = namespace
        self._factory = InformerFactory(client)
        self._nodes = self._factory.informer_for(core_kinds.NODE)
        self._nodes.add_indexers({LABEL_INDEX: label_pairs})
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
        self._states_by_name = _StatesByName(self._states.store, namespace)
        self._selections = SelectionMemo()
        self._serial = next(VIEW_SERIALS)
        # Policies first: the anchor read is the consistent one, whose server cost grows with the kind.
        self.barrier = FreshnessBarrier(
            [(kind_read(client, kinds.SRIOV_NETWORK_NODE_POLICY, namespace), self._policies.store),
             (kind_read(client, core_kinds.NODE, None), self._nodes.store),
             (kind_read(client, kinds.SRIOV_NETWORK_NODE_STATE, namespace), self._states.store)],
            settle=settle, timeout=barrier_timeout)
        moved = FuncHandler(add=lambda _obj, _initial: self.barrier.note_change(),
                            update=lambda _old, _new: self.barrier.note_change(),
                            delete=lambda _obj: self.barrier.note_change())
        for informer in (self._nodes, self._states, self._policies):
            informer.add_event_handler(moved)


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
        self.barrier.close()

    def nodes(self, selector: Mapping[str, str]) -> Sequence[Obj]:
        store = self._nodes.store
        version = store.resource_version
        if not version:
            return select_indexed(selector, lambda pairs: store.by_indices(LABEL_INDEX, pairs))
        return self._selections.select(version, selector, lambda: select_indexed(
            selector, lambda pairs: store.by_indices(LABEL_INDEX, pairs)))

    def node_states(self) -> Sequence[Obj]:
        return list(self._states.store.list())

    def node_states_by_name(self) -> Mapping[str, Obj]:
        return self._states_by_name

    def fresh(self) -> None:
        self.barrier.wait()

    def policies(self) -> Sequence[Obj]:
        """From the cache, behind the same barrier as Nodes and NodeStates (`fresh()`), so a peer created
        just before this policy is seen."""
        return list(self._policies.store.list())

    def network_attachment_definition(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._client.get(kinds.NETWORK_ATTACHMENT_DEFINITION, name, namespace)
        except NotFound:
            return None

    def supported_nics(self) -> SupportedNics:
        return self._nics.current()

    def version(self) -> Hashable:
        """The Node, NodeState and policy caches' resourceVersions (each advances with every applied
        event); None until all three have one."""
        versions = (self._nodes.store.resource_version, self._states.store.resource_version,
                    self._policies.store.resource_version)
        return (self._serial, *versions) if all(versions) else None
