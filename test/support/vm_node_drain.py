"""A workload on the guest node for the drain handshake of `make e2e-node`, and proof of its eviction.

The workload is a one-replica Deployment pinned to the guest node whose pod requests the policy's VF
resource: the operator's partial drain (a reconfiguration without reboot) evicts exactly such pods.
The resource is advertised by our device-plugin pod on the guest node.

Eviction, not deletion: since PodDisruptionConditions (GA in Kubernetes 1.31) the Eviction API marks the
pod with the condition DisruptionTarget / EvictionByEvictionAPI before deleting it. A polled pod may be
gone before a poll sees that, so `PodEvents` keeps a watch open and records every version of the pods.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from sriovop.devcluster.images.pause import PAUSE_IMAGE
from sriovop.runtime.client import Client, WatchStream
from sriovop.runtime.errors import ApiError
from sriovop.runtime.kinds import POD

WORKLOAD = "vm-workload"
EVICTED_REASON = "EvictionByEvictionAPI"


def workload_deployment(node: str, resource: str) -> dict[str, Any]:
    labels = {"app": WORKLOAD}
    return {
        "metadata": {"name": WORKLOAD},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": PAUSE_IMAGE, "imagePullPolicy": "IfNotPresent",
                                     "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}}}]}}},
    }


def running_workload(kube: Client, namespace: str, node: str) -> dict[str, Any] | None:
    """The workload's pod Running (not terminating) on `node`, or None."""
    for pod in kube.list(POD, namespace, label_selector={"app": WORKLOAD}):
        if pod["metadata"].get("deletionTimestamp") or (pod.get("spec") or {}).get("nodeName") != node:
            continue
        if (pod.get("status") or {}).get("phase") == "Running":
            return dict(pod)
    return None


def evicted(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "DisruptionTarget" and c.get("reason") == EVICTED_REASON
               for c in (pod.get("status") or {}).get("conditions") or [])


@dataclass
class PodEvents:
    """Every watch event of the workload's pods from `resource_version` on, until `stop()`."""

    kube: Client
    namespace: str
    resource_version: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread = threading.Thread(target=self._run, name="vm-workload-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # A broken watch is resumed from the last version seen, so no event in between is lost.
        while not self._stop.is_set():
            try:
                self._stream = self.kube.watch(POD, self.namespace, resource_version=self.resource_version,
                                               label_selector={"app": WORKLOAD}, timeout_seconds=60)
                for etype, obj in self._stream:
                    if etype == "BOOKMARK":
                        self.resource_version = obj["metadata"]["resourceVersion"]
                        continue
                    self.events.append((etype, obj))
                    self.resource_version = obj["metadata"]["resourceVersion"]
            except ApiError as exc:
                self.errors.append(str(exc))
                self._stop.wait(1.0)

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(timeout=30)

    def eviction_of(self, uid: str) -> dict[str, Any] | None:
        """The first version of pod `uid` that the Eviction API marked, or None."""
        return next((obj for _, obj in self.events if obj["metadata"]["uid"] == uid and evicted(obj)), None)

    def deleted(self, uid: str) -> bool:
        return any(etype == "DELETED" and obj["metadata"]["uid"] == uid for etype, obj in self.events)
