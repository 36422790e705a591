"""A tiny device plugin for a real kubelet (API v1beta1), so that the kubelet assigns device IDs.

It registers `resource` with the kubelet's plugin watcher (`pluginregistration.Registration`: GetInfo,
NotifyRegistrationStatus), serves `GetDevicePluginOptions`, `ListAndWatch` (the device IDs, all Healthy, sent once
and the stream kept open) and `Allocate` (an empty response per container), over the gRPC transport of
`sriovop.kubelet.grpc`. The IDs are whatever the test says, e.g. the PCI addresses of a simulated
host's VFs, so that the pod-resources API then reports a pod holding those VFs.

Messages (k8s.io/kubelet/pkg/apis/pluginregistration/v1 and deviceplugin/v1beta1):
    PluginInfo { string type = 1; string name = 2; string endpoint = 3; repeated string supported_versions = 4; }
    RegistrationStatus { bool plugin_registered = 1; string error = 2; }
    ListAndWatchResponse { repeated Device devices = 1; }   Device { string ID = 1; string health = 2; }
    AllocateRequest { repeated ContainerAllocateRequest container_requests = 1; }
    AllocateResponse { repeated ContainerAllocateResponse container_responses = 1; }
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from sriovop.kubelet.grpc import Server
from sriovop.kubelet.protowire import field_bytes, field_str, fields

API_VERSION = "v1beta1"
SERVICE = "/v1beta1.DevicePlugin"
REGISTRATION = "/pluginregistration.Registration"


class FakeDevicePlugin:
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
        self.server = Server(self.socket,
                             unary={f"{REGISTRATION}/GetInfo": self._info,
                                    f"{REGISTRATION}/NotifyRegistrationStatus": self._notified,
                                    f"{SERVICE}/GetDevicePluginOptions": lambda _req: b"",
                                    f"{SERVICE}/Allocate": self._allocate},
                             streaming={f"{SERVICE}/ListAndWatch": self._list_and_watch})

    def _info(self, _request: bytes) -> bytes:
        return (field_str(1, "DevicePlugin") + field_str(2, self.resource) + field_str(3, str(self.socket))
                + field_str(4, API_VERSION))

    def _notified(self, request: bytes) -> bytes:
        for number, _wire, value in fields(request):
            if number == 1:
                ok = bool(value)
                if ok:
                    self.registered.set()
            elif number == 2 and isinstance(value, bytes):
                self.registration_error = value.decode()
        return b""

    def _allocate(self, request: bytes) -> bytes:
        out = b""
        for number, _wire, container in fields(request):
            if number == 1 and isinstance(container, bytes):
                ids = [v.decode() for n, _w, v in fields(container) if n == 1 and isinstance(v, bytes)]
                self.allocations.append(ids)
                out += field_bytes(1, b"")  # an empty ContainerAllocateResponse: no env, mounts or devices
        return out

    def _list_and_watch(self, _request: bytes) -> Iterator[bytes]:
        devices = b"".join(field_bytes(1, field_str(1, dev) + field_str(2, "Healthy")) for dev in self.device_ids)
        yield devices
        self._stop.wait()  # the kubelet treats a closed stream as the plugin going away

    def start(self) -> FakeDevicePlugin:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.server.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.server.stop()
