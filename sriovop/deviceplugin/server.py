"""The DevicePlugin gRPC service of one resource, on its own unix socket.

ListAndWatch sends the full device list at once and again whenever a device's health changes (the only
way the kubelet learns of it), and ends when the server stops or restarts, so the kubelet reconnects.
Allocate answers per container (allocate.py) and writes the device-info files; GetPreferredAllocation
and PreStartContainer are not asked for (both options false) and answer empty, as upstream's do.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator, Mapping
from concurrent import futures
from pathlib import Path

import grpc
import structlog

from sriovop.deviceplugin import allocate, deviceinfo
from sriovop.deviceplugin.pools import ResourcePool
from sriovop.host.paths import HostPaths
from sriovop.kubelet import deviceplugin_v1beta1_pb2 as pb
from sriovop.kubelet import deviceplugin_v1beta1_pb2_grpc as pb_grpc

log = structlog.get_logger(__name__)

#: Distinct private names for the sockets this process binds (renamed into place at once).
_BIND_SEQ = itertools.count()

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"


class ResourceServer(pb_grpc.DevicePluginServicer):
    def __init__(self, pool: ResourcePool, socket: Path, paths: HostPaths, devinfo_dir: Path,
                 use_cdi: bool = False, extra_servicers: tuple[object, ...] = ()) -> None:
        self.pool = pool
        self.socket = socket
        self.paths = paths
        self.devinfo_dir = devinfo_dir
        self.use_cdi = use_cdi
        self._extra = extra_servicers
        self._health = dict.fromkeys(pool.devices, HEALTHY)
        self._cond = threading.Condition()
        self._generation = 0  # bumped on every health change and on stop: wakes the streams
        self._running = False
        self._server: grpc.Server | None = None
        self.allocations: list[list[str]] = []
        self._socket_inode: int | None = None

    # --- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Serve on `socket` (a stale file there is removed first). Device-info files are left alone: a
        restart after the kubelet's must not take them from running pods (the manager cleans at start)."""
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="dp-grpc"))
        pb_grpc.add_DevicePluginServicer_to_server(self, server)
        for servicer in self._extra:
            add = getattr(servicer, "add_to_server", None)
            if add is not None:
                add(server)
        # Bound under a private name, then renamed into place: gRPC removes the path it bound when it
        # stops, and by then `socket` may be the next plugin's (see _unlink_own_socket).
        bound = self.socket.with_name(f".{os.getpid()}-{next(_BIND_SEQ)}.sock")
        server.add_insecure_port(f"unix://{bound}")
        # Bound, not yet serving: only root (the kubelet) may connect, whatever the process umask.
        os.chmod(bound, 0o600)
        self._socket_inode = os.stat(bound).st_ino
        os.replace(bound, self.socket)
        with self._cond:
            self._running = True
        server.start()
        self._server = server
        log.info("serving resource", resource=self.pool.name, socket=str(self.socket), devices=len(self.pool.devices))

    def stop(self, remove_infos: bool = True) -> None:
        with self._cond:
            self._running = False
            self._generation += 1
            self._cond.notify_all()
        if self._server is not None:
            self._server.stop(grace=1).wait(5)
            self._server = None
        self._unlink_own_socket()
        if remove_infos:
            deviceinfo.remove_infos(self.devinfo_dir, self.pool.name)

    def _unlink_own_socket(self) -> None:
        """Remove the socket file only if it is still the one this server bound: in a DaemonSet rollout
        the next plugin process binds the same path before this one stops, and the kubelet's plugin
        watcher would take the removal of the new file for that plugin going away."""
        try:
            if os.lstat(self.socket).st_ino == self._socket_inode:
                self.socket.unlink()
        except FileNotFoundError:
            pass

    def socket_present(self) -> bool:
        return self.socket.is_socket()

    # --- health ---------------------------------------------------------------------------------
    def set_health(self, health: Mapping[str, str]) -> list[str]:
        """Update the devices' health (PCI → Healthy/Unhealthy); the changed PCI addresses."""
        with self._cond:
            changed = [pci for pci in self._health if health.get(pci, UNHEALTHY) != self._health[pci]]
            for pci in changed:
                self._health[pci] = health.get(pci, UNHEALTHY)
            if changed:
                self._generation += 1
                self._cond.notify_all()
        for pci in changed:
            log.info("device health changed", resource=self.pool.name, device=pci, health=self._health[pci])
        return changed

    def health(self) -> dict[str, str]:
        with self._cond:
            return dict(self._health)

    def _devices(self) -> list[pb.Device]:
        out = []
        for pci, dev in self.pool.devices.items():
            device = pb.Device(ID=pci, health=self._health[pci])
            if dev.numa_node is not None and not self.pool.config.exclude_topology:
                device.topology.nodes.add(ID=dev.numa_node)
            out.append(device)
        return out

    # --- DevicePlugin ---------------------------------------------------------------------------
    def GetDevicePluginOptions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.DevicePluginOptions:
        return pb.DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=False)

    def ListAndWatch(self, request: pb.Empty, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:
        log.info("ListAndWatch started", resource=self.pool.name)
        with self._cond:
            seen = self._generation
            running = self._running
            devices = self._devices()
        if not running:
            return
        yield pb.ListAndWatchResponse(devices=devices)
        while context.is_active():
            with self._cond:
                if self._generation == seen:
                    self._cond.wait(timeout=1.0)
                if not self._running:
                    log.info("ListAndWatch ended: server stopping", resource=self.pool.name)
                    return
                if self._generation == seen:
                    continue
                seen = self._generation
                devices = self._devices()
            yield pb.ListAndWatchResponse(devices=devices)

    def GetPreferredAllocation(self, request: pb.PreferredAllocationRequest,
                               context: grpc.ServicerContext) -> pb.PreferredAllocationResponse:
        return pb.PreferredAllocationResponse()

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:
        response = pb.AllocateResponse()
        try:
            for container in request.container_requests:
                ids = list(container.devices_ids)
                response.container_responses.append(
                    allocate.container_response(self.pool, ids, self.paths, self.use_cdi))
        except allocate.UnknownDeviceError as exc:
            log.warning("Allocate refused", resource=self.pool.name, error=str(exc))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        for container in request.container_requests:
            ids = list(container.devices_ids)
            for pci in ids:
                deviceinfo.write_info(self.devinfo_dir, self.pool.name, self.pool.devices[pci],
                                      self.pool.claimed_by[pci].is_rdma)
            self.allocations.append(ids)
            log.info("allocated", resource=self.pool.name, devices=ids)
        return response

    def PreStartContainer(self, request: pb.PreStartContainerRequest,
                          context: grpc.ServicerContext) -> pb.PreStartContainerResponse:
        return pb.PreStartContainerResponse()
