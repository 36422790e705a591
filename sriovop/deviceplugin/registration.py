"""Telling the kubelet about a resource, in either of the kubelet's two ways.

- kubelet.sock (what the operator's DaemonSet uses; the kubelet's device-plugin directory is fixed at
  /var/lib/kubelet/device-plugins whatever its --root-dir): the plugin calls
  `v1beta1.Registration/Register` with its socket's file name. A kubelet that restarts empties that
  directory, so the plugin's own socket vanishing is the signal to serve again and re-register
  (manager.py checks it every few seconds, as upstream does).
- plugin watcher (`--plugin-registry-dir`, the kubelet's `<root-dir>/plugins_registry`): the plugin's
  socket sits in that directory and also serves `pluginregistration.Registration`; the kubelet finds it
  by inotify (and again at its own start), asks GetInfo and reports the outcome.
"""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import structlog

from sriovop.kubelet import deviceplugin_v1beta1_pb2 as pb
from sriovop.kubelet import deviceplugin_v1beta1_pb2_grpc as pb_grpc
from sriovop.kubelet import pluginregistration_v1_pb2 as reg
from sriovop.kubelet import pluginregistration_v1_pb2_grpc as reg_grpc
from sriovop.kubelet.channel import call, unix_channel

log = structlog.get_logger(__name__)

API_VERSION = "v1beta1"
KUBELET_SOCKET = "kubelet.sock"
DEFAULT_DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
DEVICE_PLUGIN_TYPE = "DevicePlugin"
#: What GetInfo offers, as upstream's plugin does.
SUPPORTED_VERSIONS = ("v1alpha1", API_VERSION)


def register(kubelet_socket: Path, endpoint: str, resource_name: str, timeout: float = 10.0) -> None:
    """One Register call (raises sriovop.kubelet.channel.KubeletApiError when the kubelet refuses or is
    not there). `endpoint` is the plugin socket's name relative to the device-plugin directory."""
    request = pb.RegisterRequest(version=API_VERSION, endpoint=endpoint, resource_name=resource_name,
                                 options=pb.DevicePluginOptions())
    with unix_channel(kubelet_socket) as channel:
        stub = pb_grpc.RegistrationStub(channel)
        call(kubelet_socket, "/v1beta1.Registration/Register",
             lambda: stub.Register(request, timeout=timeout, wait_for_ready=False))
    log.info("registered with the kubelet", resource=resource_name, endpoint=endpoint)


class WatcherRegistration(reg_grpc.RegistrationServicer):
    """`pluginregistration.Registration` on the plugin's own socket (plugin-watcher mode)."""

    def __init__(self, resource_name: str, endpoint: Path) -> None:
        self.resource_name = resource_name
        self.endpoint = endpoint
        self.registered = threading.Event()
        self.notifications = 0
        self.error = ""

    def add_to_server(self, server: grpc.Server) -> None:
        reg_grpc.add_RegistrationServicer_to_server(self, server)

    def GetInfo(self, request: reg.InfoRequest, context: grpc.ServicerContext) -> reg.PluginInfo:
        return reg.PluginInfo(type=DEVICE_PLUGIN_TYPE, name=self.resource_name, endpoint=str(self.endpoint),
                              supported_versions=list(SUPPORTED_VERSIONS))

    def NotifyRegistrationStatus(self, request: reg.RegistrationStatus,
                                 context: grpc.ServicerContext) -> reg.RegistrationStatusResponse:
        self.notifications += 1
        self.error = request.error
        if request.plugin_registered:
            self.registered.set()
            log.info("registered by the kubelet's plugin watcher", resource=self.resource_name)
        else:
            self.registered.clear()
            log.error("the kubelet refused the plugin", resource=self.resource_name, error=request.error)
        return reg.RegistrationStatusResponse()
