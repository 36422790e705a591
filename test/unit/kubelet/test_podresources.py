"""The pod-resources client on grpcio: a List answer recorded from a real kubelet (v1.35.4, a pod holding
one device of a test device plugin) decodes, and the client reads it back from a grpcio server standing
in for the kubelet's socket (host: none; this process only)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import DecodeError

from sriovop.kubelet import podresources_v1_pb2 as pb
from sriovop.kubelet import podresources_v1_pb2_grpc as pb_grpc
from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import (
    ContainerDevices,
    ContainerResources,
    PodResources,
    decode_list_response,
    list_pod_resources,
)

RECORDED = (Path(__file__).parent / "podresources-list-kubelet-v1.35.4.bin").read_bytes()
EXPECTED = [PodResources("vfpod", "default", (ContainerResources(
    "main", (ContainerDevices("sriovop.test/vf", ("0000:18:02.0",)),)),))]


def test_recorded_kubelet_answer_decodes() -> None:
    assert decode_list_response(RECORDED) == EXPECTED


def test_topology_and_cpus() -> None:
    devices = pb.ContainerDevices(resource_name="openshift.io/intel", device_ids=["0000:3b:02.0", "0000:3b:02.1"],
                                  topology=pb.TopologyInfo(nodes=[pb.NUMANode(ID=1), pb.NUMANode(ID=0)]))
    answer = pb.ListPodResourcesResponse(pod_resources=[pb.PodResources(
        name="p", namespace="ns", containers=[pb.ContainerResources(name="app", devices=[devices], cpu_ids=[2, 3])])])
    [decoded] = decode_list_response(answer.SerializeToString())
    assert decoded.containers[0].devices[0] == ContainerDevices(
        "openshift.io/intel", ("0000:3b:02.0", "0000:3b:02.1"), (1, 0))
    assert decoded.containers[0].cpu_ids == (2, 3)


def test_truncated_message_is_an_error() -> None:
    with pytest.raises(DecodeError):
        decode_list_response(RECORDED[:-3])


class _Lister(pb_grpc.PodResourcesListerServicer):
    def __init__(self, answer: pb.ListPodResourcesResponse) -> None:
        self.answer = answer

    def List(self, request: pb.ListPodResourcesRequest, context: grpc.ServicerContext) -> pb.ListPodResourcesResponse:
        return self.answer


def _serve(socket: Path, answer: pb.ListPodResourcesResponse) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_PodResourcesListerServicer_to_server(_Lister(answer), server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    return server


@pytest.fixture
def kubelet_like(tmp_path: Path) -> Iterator[Path]:
    """A grpcio server answering List with the recorded kubelet answer."""
    socket = tmp_path / "kubelet.sock"
    server = _serve(socket, pb.ListPodResourcesResponse.FromString(RECORDED))
    try:
        yield socket
    finally:
        server.stop(None)


def test_list_over_grpc(kubelet_like: Path) -> None:
    assert list_pod_resources(kubelet_like, timeout=10) == EXPECTED


def test_missing_socket_names_it(tmp_path: Path) -> None:
    with pytest.raises(KubeletApiError) as info:
        list_pod_resources(tmp_path / "nope.sock", timeout=2)
    assert "nope.sock" in str(info.value) and info.value.code == "UNAVAILABLE"


def test_a_large_answer(tmp_path: Path) -> None:
    """Three thousand pods: an answer spanning many HTTP/2 frames and flow-control windows."""
    def pod(i: int) -> pb.PodResources:
        devices = pb.ContainerDevices(resource_name="r/x", device_ids=[f"0000:{i // 256:02x}:{i % 32:02x}.1"])
        return pb.PodResources(name=f"pod-{i}", namespace="ns",
                               containers=[pb.ContainerResources(name="c", devices=[devices])])

    pods = [pod(i) for i in range(3000)]
    answer = pb.ListPodResourcesResponse(pod_resources=pods)
    socket = tmp_path / "big.sock"
    server = _serve(socket, answer)
    try:
        got = list_pod_resources(socket, timeout=20)
    finally:
        server.stop(None)
    assert answer.ByteSize() > 100_000 and len(got) == 3000 and got[-1].name == "pod-2999"
