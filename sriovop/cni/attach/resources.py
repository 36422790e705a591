"""Which devices the kubelet gave a pod, per resource name, and which one each attachment takes.

The kubelet knows what the device plugin allocated to the pod. It is asked through the pod-resources
API (`List`, matched by pod namespace and name); when that socket is missing or does not answer, the
kubelet's device-manager checkpoint is read instead (matched by pod UID), as Multus does. IDs are
string-sorted and each NetworkAttachmentDefinition with that resource takes the next one; when none is
left, no deviceID is injected (Multus does not fail there either: the delegate says what it misses).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from sriovop.kubelet.podresources import PodResources, list_pod_resources

log = structlog.get_logger("cni.attach")

POD_RESOURCES_SOCKET = Path("pod-resources") / "kubelet.sock"
CHECKPOINT = Path("device-plugins") / "kubelet_internal_checkpoint"

Lister = Callable[[Path], list[PodResources]]


def from_pod_resources(pods: Iterable[PodResources], namespace: str, name: str) -> dict[str, list[str]]:
    """Devices of every container of the pod, by resource name."""
    out: dict[str, list[str]] = {}
    for pod in pods:
        if pod.namespace != namespace or pod.name != name:
            continue
        for container in pod.containers:
            for devices in container.devices:
                out.setdefault(devices.resource_name, []).extend(devices.device_ids)
    return out


def from_checkpoint(data: dict[str, Any], pod_uid: str) -> dict[str, list[str]]:
    """Devices recorded for the pod UID in `kubelet_internal_checkpoint`; DeviceIDs is a map by NUMA node
    since Kubernetes 1.21 and a plain list before."""
    out: dict[str, list[str]] = {}
    entries = ((data.get("Data") or {}).get("PodDeviceEntries")) or []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("PodUID") != pod_uid:
            continue
        ids = entry.get("DeviceIDs") or []
        flat = [i for group in ids.values() for i in group] if isinstance(ids, dict) else list(ids)
        out.setdefault(str(entry.get("ResourceName", "")), []).extend(str(i) for i in flat)
    return out


def pod_devices(kubelet_root: Path, namespace: str, name: str, uid: str,
                lister: Lister = list_pod_resources) -> dict[str, list[str]]:
    socket = kubelet_root / POD_RESOURCES_SOCKET
    if socket.exists():
        try:
            return from_pod_resources(lister(socket), namespace, name)
        except Exception as exc:  # any transport failure: the checkpoint still answers
            log.warning("pod-resources List failed; reading the checkpoint", socket=str(socket), error=str(exc))
    checkpoint = kubelet_root / CHECKPOINT
    if not uid:
        return {}
    try:
        data = json.loads(checkpoint.read_text())
    except (OSError, ValueError) as exc:
        log.warning("no device allocation source", checkpoint=str(checkpoint), error=str(exc))
        return {}
    return from_checkpoint(data if isinstance(data, dict) else {}, uid)


@dataclass
class DeviceAssigner:
    """Hands out the pod's devices of a resource in string order, one per attachment."""

    devices: dict[str, list[str]]
    _next: dict[str, int] = field(default_factory=dict)

    def take(self, resource_name: str) -> str:
        ids = sorted(self.devices.get(resource_name, []))
        index = self._next.get(resource_name, 0)
        if index >= len(ids):
            return ""
        self._next[resource_name] = index + 1
        return ids[index]
