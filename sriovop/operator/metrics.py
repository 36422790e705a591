"""The operator's view of every node as Prometheus series, read from its NodeState cache at scrape time.

Why from the cache at scrape time: the NodeStates are already cached by the node-policy controller,
so the series cost no request and can never disagree with what the controllers see. The shape is
kube-state-metrics' (one series per possible value, 1 for the current one, 0 for the others), so an
alert is a plain `== 1` with a `for:` duration (manifests/monitoring/):

- `sriovop_node_state_sync_status{node, status}`: the config daemon's `status.syncStatus`
  (Succeeded, InProgress, Failed); no series while a daemon has not reported yet;
- `sriovop_node_drain_state{node, state}`: the drain the config daemon reports
  (`sriovnetwork.openshift.io/current-state`: Idle, Draining, DrainComplete);
- `sriovop_node_drain_desired_state{node, state}`: what the daemon asks for
  (`.../desired-state`: Idle, Drain_Required, Reboot_Required);
- `sriovop_node_resource_vfs{node, resource}`: VFs the NodeState spec gives each device-plugin
  resource (`<prefix>/<resourceName>`, the name pods request and the metrics exporter's `dev_type`),
  the capacity the VF-pool alert compares allocations with.

Only a started operator has a source; before that (and in a follower whose caches have not synced)
the families are empty.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.api.v1.pfnames import PfNameError, parse_vf_range
from sriovop.runtime.cache.reader import Cache

SYNC_STATUSES = (consts.SYNC_STATUS_SUCCEEDED, consts.SYNC_STATUS_IN_PROGRESS, consts.SYNC_STATUS_FAILED)


def resource_vfs(state: Any, prefix: str) -> dict[str, int]:
    """Resource name (with prefix) -> number of VFs the NodeState's spec gives it."""
    out: dict[str, int] = {}
    for iface in (state.get("spec") or {}).get("interfaces") or ():
        for group in iface.get("vfGroups") or ():
            name = group.get("resourceName")
            if not name:
                continue
            try:
                first, last = parse_vf_range(str(group.get("vfRange") or ""))
            except PfNameError:
                continue  # the webhook refuses such a range; a stale object counts nothing
            key = f"{prefix}/{name}" if prefix else str(name)
            out[key] = out.get(key, 0) + last - first + 1
    return out


class NodeStateCollector(Collector):
    """Renders the families above from the NodeStates of one operator's cache."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: Cache | None = None
        self._prefix = ""

    def watch(self, cache: Cache | None, resource_prefix: str = "") -> None:
        """Read NodeStates from `cache` from now on (None: stop; the families go empty)."""
        with self._lock:
            self._cache, self._prefix = cache, resource_prefix

    def _states(self) -> tuple[list[Any], str]:
        with self._lock:
            cache, prefix = self._cache, self._prefix
        if cache is None:
            return [], prefix
        states: list[Any] = []
        for inf in cache.informers_for(SRIOV_NETWORK_NODE_STATE):
            if inf.has_synced():
                states.extend(inf.store.list())
        return states, prefix

    def collect(self) -> Iterator[GaugeMetricFamily]:
        sync = GaugeMetricFamily("sriovop_node_state_sync_status",
                                 "1 for the NodeState's current status.syncStatus, 0 for the others.",
                                 labels=["node", "status"])
        drain = GaugeMetricFamily("sriovop_node_drain_state",
                                  "1 for the drain state the node's config daemon reports (current-state "
                                  "annotation), 0 for the others.", labels=["node", "state"])
        desired = GaugeMetricFamily("sriovop_node_drain_desired_state",
                                    "1 for the drain the node's config daemon asks for (desired-state "
                                    "annotation), 0 for the others.", labels=["node", "state"])
        vfs = GaugeMetricFamily("sriovop_node_resource_vfs",
                                "VFs the NodeState spec gives each device-plugin resource.",
                                labels=["node", "resource"])
        states, prefix = self._states()
        for state in sorted(states, key=lambda s: str((s.get("metadata") or {}).get("name"))):
            meta = state.get("metadata") or {}
            node = str(meta.get("name") or "")
            current = (state.get("status") or {}).get("syncStatus")
            if current:
                for status in SYNC_STATUSES:
                    sync.add_metric([node, status], 1.0 if current == status else 0.0)
            annotations = meta.get("annotations") or {}
            for family, annotation, values in (
                    (drain, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT, consts.CURRENT_DRAIN_STATES),
                    (desired, consts.NODE_STATE_DRAIN_ANNOTATION, consts.DESIRED_DRAIN_STATES)):
                value = annotations.get(annotation)
                if value:
                    for name in values:
                        family.add_metric([node, name], 1.0 if value == name else 0.0)
            for resource, count in sorted(resource_vfs(state, prefix).items()):
                vfs.add_metric([node, resource], float(count))
        yield from (sync, drain, desired, vfs)


#: The process's collector, registered once in the default registry the managers serve.
NODE_STATES = NodeStateCollector()
REGISTRY.register(NODE_STATES)
