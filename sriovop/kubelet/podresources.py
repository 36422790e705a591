"""The kubelet's pod-resources API (`v1.PodResourcesLister/List`): which pod holds which device.

The kubelet serves it on `<root-dir>/pod-resources/kubelet.sock` (default root-dir /var/lib/kubelet).
Messages (k8s.io/kubelet/pkg/apis/podresources/v1), read field by field:

    ListPodResourcesResponse { repeated PodResources pod_resources = 1; }
    PodResources       { string name = 1; string namespace = 2; repeated ContainerResources containers = 3; }
    ContainerResources { string name = 1; repeated ContainerDevices devices = 2; repeated int64 cpu_ids = 3; ... }
    ContainerDevices   { string resource_name = 1; repeated string device_ids = 2; TopologyInfo topology = 3; }
    TopologyInfo       { repeated NUMANode nodes = 1; }   NUMANode { int64 ID = 1; }
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from sriovop.kubelet.grpc import unary_call
from sriovop.kubelet.protowire import LEN, fields, packed_varints, signed64

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


def _text(value: int | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def _numa_nodes(topology: bytes) -> list[int]:
    out: list[int] = []
    for number, _wire, node in fields(topology):
        if number == 1 and isinstance(node, bytes):
            ids = [signed64(v) for n, _w, v in fields(node) if n == 1 and isinstance(v, int)]
            out.append(ids[-1] if ids else 0)  # proto3 leaves ID 0 out: an empty NUMANode is node 0
    return out


def _devices(data: bytes) -> ContainerDevices:
    name = ""
    ids: list[str] = []
    numa: list[int] = []
    for number, _wire, value in fields(data):
        if number == 1:
            name = _text(value)
        elif number == 2:
            ids.append(_text(value))
        elif number == 3 and isinstance(value, bytes):
            numa.extend(_numa_nodes(value))
    return ContainerDevices(name, tuple(ids), tuple(numa))


def _container(data: bytes) -> ContainerResources:
    name = ""
    devices: list[ContainerDevices] = []
    cpus: list[int] = []
    for number, wire, value in fields(data):
        if number == 1:
            name = _text(value)
        elif number == 2 and isinstance(value, bytes):
            devices.append(_devices(value))
        elif number == 3:  # packed (proto3 default) or one varint per entry
            if wire == LEN and isinstance(value, bytes):
                cpus.extend(signed64(v) for v in packed_varints(value))
            elif isinstance(value, int):
                cpus.append(signed64(value))
    return ContainerResources(name, tuple(devices), tuple(cpus))


def _pod(data: bytes) -> PodResources:
    name, namespace = "", ""
    containers: list[ContainerResources] = []
    for number, _wire, value in fields(data):
        if number == 1:
            name = _text(value)
        elif number == 2:
            namespace = _text(value)
        elif number == 3 and isinstance(value, bytes):
            containers.append(_container(value))
    return PodResources(name, namespace, tuple(containers))


def decode_list_response(data: bytes) -> list[PodResources]:
    return [_pod(value) for number, _wire, value in fields(data) if number == 1 and isinstance(value, bytes)]


def list_pod_resources(socket_path: str | Path = DEFAULT_SOCKET, *, timeout: float = 10.0) -> list[PodResources]:
    """One `List` call (raises sriovop.kubelet.grpc.GrpcError when the kubelet cannot be asked)."""
    return decode_list_response(unary_call(socket_path, LIST_METHOD, b"", timeout=timeout))
