"""A stand-in for the kubelet's side of the device-plugin API (`v1beta1.Registration` on kubelet.sock), for
tests of `sriovop device-plugin` that need to count registrations, read the ListAndWatch stream and call
Allocate without a kubelet. The real kubelet is used by test/integration/cluster/test_device_plugin_kubelet.py.
"""

from __future__ import annotations

import threading
from concurrent import futures
from pathlib import Path

import grpc

from sriovop.kubelet import deviceplugin_v1beta1_pb2 as pb
from sriovop.kubelet import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from sriovop.kubelet.channel import unix_channel


class FakeKubeletRegistry(pb_grpc.RegistrationServicer):
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.socket = directory / "kubelet.sock"
        self.requests: list[pb.RegisterRequest] = []
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        with self._lock:
            self.requests.append(request)
        return pb.Empty()

    def start(self) -> FakeKubeletRegistry:
        """Like a starting kubelet: empty the directory, then serve kubelet.sock."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for path in self.dir.iterdir():
            path.unlink()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_RegistrationServicer_to_server(self, server)
        server.add_insecure_port(f"unix://{self.socket}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(None)
            self._server = None
        self.socket.unlink(missing_ok=True)

    def registered(self) -> list[tuple[str, str, str]]:
        with self._lock:
            return [(r.version, r.endpoint, r.resource_name) for r in self.requests]


class Stream:
    """The ListAndWatch stream of one plugin socket, read in a thread: every list the plugin sent."""

    def __init__(self, socket: Path) -> None:
        self.channel = unix_channel(socket)
        self.lists: list[dict[str, str]] = []
        self.ended = threading.Event()
        self._call = pb_grpc.DevicePluginStub(self.channel).ListAndWatch(pb.Empty())
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for response in self._call:
                self.lists.append({d.ID: d.health for d in response.devices})
        except grpc.RpcError:
            pass
        self.ended.set()

    def latest(self) -> dict[str, str] | None:
        return self.lists[-1] if self.lists else None

    def close(self) -> None:
        self._call.cancel()
        self.channel.close()


def allocate(socket: Path, ids: list[str]) -> pb.ContainerAllocateResponse:
    with unix_channel(socket) as channel:
        request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])
        return pb_grpc.DevicePluginStub(channel).Allocate(request, timeout=10).container_responses[0]


def other_rpcs(socket: Path, ids: list[str]) -> tuple[bool, bool, list[list[str]], str]:
    """What the kubelet asks besides ListAndWatch and Allocate: (pre_start_required,
    get_preferred_allocation_available, the preferred device lists, the status of an Allocate of an unknown
    device); PreStartContainer must answer too."""
    with unix_channel(socket) as channel:
        stub = pb_grpc.DevicePluginStub(channel)
        options = stub.GetDevicePluginOptions(pb.Empty(), timeout=10)
        preferred = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
            pb.ContainerPreferredAllocationRequest(available_deviceIDs=ids, allocation_size=1)]), timeout=10)
        stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=ids[:1]), timeout=10)
        try:
            stub.Allocate(pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=["0000:ff:1f.7"])]), timeout=10)
            refused = "OK"
        except grpc.RpcError as exc:
            refused = exc.code().name if isinstance(exc, grpc.Call) else "UNKNOWN"
    lists = [list(r.deviceIDs) for r in preferred.container_responses]
    return options.pre_start_required, options.get_preferred_allocation_available, lists, refused
