"""The kubelet's pod-resources API (`v1.PodResourcesLister`): which pod holds which device.

The kubelet serves it on `<root-dir>/pod-resources/kubelet.sock` (default root-dir /var/lib/kubelet) and
recreates the socket when it restarts, so a channel is opened per call. The answer is turned into frozen
dataclasses so that callers (the metrics exporter) neither import generated code nor keep messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from sriovop.kubelet import podresources_v1_pb2 as pb
from sriovop.kubelet.channel import call, unix_channel
from sriovop.kubelet.podresources_v1_pb2_grpc import PodResourcesListerStub

DEFAULT_SOCKET: Final = "/var/lib/kubelet/pod-resources/kubelet.sock"
LIST_METHOD: Final = "/v1.PodResourcesLister/List"


@dataclass(frozen=True)
class ContainerDevices:
    resource_name: str
    device_ids: tuple[str, ...]
    numa_nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class ContainerResources:
    name: str
    devices: tuple[ContainerDevices, ...] = ()
    cpu_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class PodResources:
    name: str
    namespace: str
    containers: tuple[ContainerResources, ...] = field(default_factory=tuple)


def _devices(msg: pb.ContainerDevices) -> ContainerDevices:
    return ContainerDevices(msg.resource_name, tuple(msg.device_ids), tuple(n.ID for n in msg.topology.nodes))


def _pod(msg: pb.PodResources) -> PodResources:
    return PodResources(msg.name, msg.namespace, tuple(
        ContainerResources(c.name, tuple(_devices(d) for d in c.devices), tuple(c.cpu_ids))
        for c in msg.containers))


def from_list_response(response: pb.ListPodResourcesResponse) -> list[PodResources]:
    return [_pod(p) for p in response.pod_resources]


def decode_list_response(data: bytes) -> list[PodResources]:
    """A serialized `ListPodResourcesResponse` (raises google.protobuf.message.DecodeError if malformed)."""
    return from_list_response(pb.ListPodResourcesResponse.FromString(data))


def list_pod_resources(socket_path: str | Path = DEFAULT_SOCKET, *, timeout: float = 10.0) -> list[PodResources]:
    """One `List` call (raises sriovop.kubelet.channel.KubeletApiError when the kubelet cannot be asked)."""
    with unix_channel(socket_path) as channel:
        stub = PodResourcesListerStub(channel)
        response = call(socket_path, LIST_METHOD,
                        lambda: stub.List(pb.ListPodResourcesRequest(), timeout=timeout))
    return from_list_response(response)


ALLOCATABLE_METHOD: Final = "/v1.PodResourcesLister/GetAllocatableResources"


def allocatable_devices(socket_path: str | Path = DEFAULT_SOCKET, *, timeout: float = 10.0) -> list[ContainerDevices]:
    """`GetAllocatableResources`: the devices this kubelet process can hand out now, per resource (what
    its device plugins registered since it started; raises KubeletApiError when it cannot be asked)."""
    with unix_channel(socket_path) as channel:
        stub = PodResourcesListerStub(channel)
        response = call(socket_path, ALLOCATABLE_METHOD,
                        lambda: stub.GetAllocatableResources(pb.AllocatableResourcesRequest(), timeout=timeout))
    return [_devices(d) for d in response.devices]
