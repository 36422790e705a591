"""The pod-resources client: a List answer recorded from a real kubelet (v1.35.4, a pod holding one
device of a test device plugin) is decoded, and served back over our gRPC server to the client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.kubelet.grpc import UNIMPLEMENTED, GrpcError, Server, unary_call
from sriovop.kubelet.podresources import (
    LIST_METHOD,
    ContainerDevices,
    ContainerResources,
    PodResources,
    decode_list_response,
    list_pod_resources,
)
from sriovop.kubelet.protowire import ProtoError, field_bytes, field_int, field_str

RECORDED = (Path(__file__).parent / "podresources-list-kubelet-v1.35.4.bin").read_bytes()
EXPECTED = [PodResources("vfpod", "default", (ContainerResources(
    "main", (ContainerDevices("sriovop.test/vf", ("0000:18:02.0",)),)),))]


def test_recorded_kubelet_answer_decodes() -> None:
    assert decode_list_response(RECORDED) == EXPECTED


def test_topology_cpus_and_unknown_fields() -> None:
    numa = field_bytes(3, field_bytes(1, field_int(1, 1)) + field_bytes(1, field_int(1, 0)))
    devices = field_str(1, "openshift.io/intel") + field_str(2, "0000:3b:02.0") + field_str(2, "0000:3b:02.1") + numa
    packed_cpus = field_bytes(3, bytes([2, 3]))
    container = field_str(1, "app") + field_bytes(2, devices) + packed_cpus + field_bytes(9, b"future")
    pod = field_str(1, "p") + field_str(2, "ns") + field_bytes(3, container) + field_int(7, 5)
    [decoded] = decode_list_response(field_bytes(1, pod))
    assert decoded.containers[0].devices[0] == ContainerDevices("openshift.io/intel", ("0000:3b:02.0", "0000:3b:02.1"),
                                                               (1, 0))
    assert decoded.containers[0].cpu_ids == (2, 3)


def test_truncated_message_is_an_error() -> None:
    with pytest.raises(ProtoError):
        decode_list_response(RECORDED[:-3])


@pytest.fixture
def kubelet_like(tmp_path: Path) -> Iterator[Path]:
    """Our gRPC server answering List with the recorded bytes (a stand-in for the kubelet's socket)."""
    server = Server(tmp_path / "kubelet.sock", unary={LIST_METHOD: lambda _req: RECORDED}).start()
    try:
        yield server.path
    finally:
        server.stop()


def test_list_over_grpc(kubelet_like: Path) -> None:
    assert list_pod_resources(kubelet_like, timeout=10) == EXPECTED


def test_unknown_method_reports_the_grpc_status(kubelet_like: Path) -> None:
    with pytest.raises(GrpcError) as info:
        unary_call(kubelet_like, "/v1.PodResourcesLister/Get", b"", timeout=10)
    assert info.value.code == UNIMPLEMENTED and "unknown method" in info.value.message


def test_missing_socket_names_it(tmp_path: Path) -> None:
    with pytest.raises(GrpcError) as info:
        list_pod_resources(tmp_path / "nope.sock", timeout=2)
    assert "nope.sock" in str(info.value)


def test_a_large_answer_crosses_frames_and_windows(tmp_path: Path) -> None:
    """Several hundred pods: more than one 16 KiB frame and more than the default 64 KiB window."""
    def pod(i: int) -> bytes:
        devices = field_str(1, "r/x") + field_str(2, f"0000:{i // 256:02x}:{i % 32:02x}.1")
        return field_bytes(1, field_str(1, f"pod-{i}") + field_str(2, "ns")
                           + field_bytes(3, field_str(1, "c") + field_bytes(2, devices)))
    pods = b"".join(pod(i) for i in range(3000))
    server = Server(tmp_path / "big.sock", unary={LIST_METHOD: lambda _req: pods}).start()
    try:
        got = list_pod_resources(server.path, timeout=20)
    finally:
        server.stop()
    assert len(pods) > 100_000 and len(got) == 3000 and got[-1].name == "pod-2999"
