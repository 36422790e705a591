"""A tiny device plugin for a real kubelet (API v1beta1) on grpcio, so that the kubelet assigns device IDs.

It registers `resource` with the kubelet's plugin watcher (`pluginregistration.Registration`: GetInfo,
NotifyRegistrationStatus), serves `GetDevicePluginOptions`, `ListAndWatch` (the device IDs, all Healthy,
sent once and the stream kept open) and `Allocate` (an empty response per container). The IDs are whatever
the test says, e.g. the PCI addresses of a simulated host's VFs, so that the pod-resources API then reports
a pod holding those VFs. (`sriovop device-plugin` is the real one; this one lets a test choose the IDs.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc

from sriovop.kubelet import deviceplugin_v1beta1_pb2 as dp
from sriovop.kubelet import deviceplugin_v1beta1_pb2_grpc as dp_grpc
from sriovop.kubelet import pluginregistration_v1_pb2 as reg
from sriovop.kubelet import pluginregistration_v1_pb2_grpc as reg_grpc

API_VERSION = "v1beta1"


class FakeDevicePlugin(dp_grpc.DevicePluginServicer, reg_grpc.RegistrationServicer):
    """Registers through the kubelet's plugin watcher: a socket in `<kubelet root>/plugins_registry`
    answering `pluginregistration.Registration` (GetInfo: type DevicePlugin, the resource, the endpoint
    = this same socket). Unlike `device-plugins/kubelet.sock`, whose path is fixed at
    /var/lib/kubelet whatever the kubelet's --root-dir (so kubelets sharing a host share it, and each
    one empties it at start), the registry directory belongs to one kubelet."""

    def __init__(self, kubelet_root: Path, resource: str, device_ids: list[str],
                 name: str = "sriovop-test-dp.sock") -> None:
        self.socket = kubelet_root / "plugins_registry" / name
        self.resource = resource
        self.device_ids = list(device_ids)
        self.allocations: list[list[str]] = []
        self.registered = threading.Event()
        self.registration_error = ""
        self._stop = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dp_grpc.add_DevicePluginServicer_to_server(self, self.server)
        reg_grpc.add_RegistrationServicer_to_server(self, self.server)

    def GetInfo(self, request: reg.InfoRequest, context: grpc.ServicerContext) -> reg.PluginInfo:
        return reg.PluginInfo(type="DevicePlugin", name=self.resource, endpoint=str(self.socket),
                              supported_versions=[API_VERSION])

    def NotifyRegistrationStatus(self, request: reg.RegistrationStatus,
                                 context: grpc.ServicerContext) -> reg.RegistrationStatusResponse:
        if request.plugin_registered:
            self.registered.set()
        self.registration_error = request.error
        return reg.RegistrationStatusResponse()

    def GetDevicePluginOptions(self, request: dp.Empty, context: grpc.ServicerContext) -> dp.DevicePluginOptions:
        return dp.DevicePluginOptions()

    def Allocate(self, request: dp.AllocateRequest, context: grpc.ServicerContext) -> dp.AllocateResponse:
        out = dp.AllocateResponse()
        for container in request.container_requests:
            self.allocations.append(list(container.devices_ids))
            out.container_responses.add()  # empty: no env, mounts or devices
        return out

    def ListAndWatch(self, request: dp.Empty, context: grpc.ServicerContext) -> Iterator[dp.ListAndWatchResponse]:
        yield dp.ListAndWatchResponse(devices=[dp.Device(ID=d, health="Healthy") for d in self.device_ids])
        while not self._stop.wait(1) and context.is_active():
            pass  # the kubelet treats a closed stream as the plugin going away

    def start(self) -> FakeDevicePlugin:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.server.add_insecure_port(f"unix://{self.socket}")
        self.server.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.server.stop(None)
        self.socket.unlink(missing_ok=True)
