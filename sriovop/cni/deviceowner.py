"""Whether a CNI ADD may take the VF it names: the kubelet's device allocation decides.

The `sriov` plugin moves whatever VF `deviceID` names into the pod's namespace, and root on the node
(or a NetworkAttachmentDefinition author, through Multus) chooses that field. Without a check, a pod
could be handed a VF the device plugin allocated to another pod. The kubelet knows who holds what
(pod-resources `List`) and which devices a device plugin manages (`GetAllocatableResources`):

- a VF the kubelet allocated to another pod is refused;
- a VF a device plugin manages but did not allocate to this pod is refused;
- a VF no device plugin manages (a NAD with a static `deviceID`) is left to the plugin's own lock.

When the kubelet cannot be asked the ADD is refused with "try again later": the runtime retries the
sandbox, and a VF is never moved on a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from sriovop.cni.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from sriovop.cni.netconf import parse_cni_args
from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import (
    ContainerDevices,
    PodResources,
    allocatable_devices,
    list_pod_resources,
)

Lister = Callable[[Path], list[PodResources]]
Allocatable = Callable[[Path], list[ContainerDevices]]


def _holders(pods: Iterable[PodResources], device_id: str) -> list[str]:
    return sorted({f"{p.namespace}/{p.name}" for p in pods for c in p.containers for d in c.devices
                   if device_id in d.device_ids})


def check_owner(socket: Path, cni_args: str, device_id: str, *, lister: Lister = list_pod_resources,
                allocatable: Allocatable = allocatable_devices) -> None:
    """Raise CniError unless the pod named by CNI_ARGS may take `device_id` (rules in the module doc)."""
    args = parse_cni_args(cni_args)
    pod = f"{args.get('K8S_POD_NAMESPACE', '')}/{args.get('K8S_POD_NAME', '')}"
    try:
        holders = _holders(lister(socket), device_id)
        managed = any(device_id in c.device_ids for c in allocatable(socket))
    except (KubeletApiError, OSError) as err:
        raise CniError(TRY_AGAIN_LATER, "kubelet pod-resources unavailable",
                       f"cannot tell who holds deviceID {device_id} ({socket}): {err}") from None
    if pod in holders:
        return
    if holders:
        raise CniError(INVALID_CONFIG, "VF allocated to another pod",
                       f"deviceID: {device_id} is allocated by the kubelet to {', '.join(holders)}, not to {pod}")
    if managed:
        raise CniError(INVALID_CONFIG, "VF not allocated to this pod",
                       f"deviceID: {device_id} is a device-plugin device the kubelet did not allocate to {pod}")
