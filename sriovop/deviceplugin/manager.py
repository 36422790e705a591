"""The device plugin process: config → pools → one server per non-empty pool → registration; then a
loop that keeps it true.

Each tick (`watch_interval`):
- the config file is read again; different bytes (a ConfigMap update arrives as a symlink swap) rebuild
  the pools; a resource whose pool is unchanged keeps its server and stream, a changed one gets a new
  server and registers again, a vanished one stops. Allocated devices are left alone: the kubelet keeps
  its allocations and the device-info files stay. A file with errors is logged and ignored (the running
  resources stay as they are);
- kubelet.sock mode: a server whose socket file is gone (a restarting kubelet empties the directory), or a
  kubelet.sock that is not the one registered with, means serve again and register again; a failed
  registration is retried;
- every `health_interval`, the host is discovered again: a device that disappeared, or whose PF link is
  administratively down, becomes Unhealthy on its ListAndWatch stream, and Healthy once it is back.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from sriovop.deviceplugin import cdi, deviceinfo
from sriovop.deviceplugin.config import ConfigError, ResourceConfig, parse_config
from sriovop.deviceplugin.devices import NetDevice, discover_devices
from sriovop.deviceplugin.pools import ResourcePool, build_pools
from sriovop.deviceplugin.registration import (
    DEFAULT_DEVICE_PLUGIN_DIR,
    KUBELET_SOCKET,
    WatcherRegistration,
    register,
)
from sriovop.deviceplugin.server import HEALTHY, UNHEALTHY, ResourceServer
from sriovop.host import Host
from sriovop.kubelet.channel import KubeletApiError

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class PluginOptions:
    config_file: Path
    resource_prefix: str = "intel.com"
    host_root: Path = Path("/")
    device_plugin_dir: Path = Path(DEFAULT_DEVICE_PLUGIN_DIR)
    #: The kubelet's plugins_registry directory: plugin-watcher mode instead of kubelet.sock.
    plugin_registry_dir: Path | None = None
    devinfo_dir: Path = Path(deviceinfo.DEFAULT_DIR)
    use_cdi: bool = False
    cdi_dir: Path = Path(cdi.DEFAULT_DIR)
    watch_interval: float = 5.0
    health_interval: float = 5.0


def health_of(pool: ResourcePool, now: dict[str, NetDevice]) -> dict[str, str]:
    """Healthy while the device is present and its PF link is up."""
    return {pci: HEALTHY if pci in now and now[pci].pf_link_up else UNHEALTHY for pci in pool.devices}


def _inode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_ino
    except OSError:
        return None


class Manager:
    def __init__(self, options: PluginOptions, host: Host | None = None) -> None:
        self.options = options
        self.host = host or Host(options.host_root)
        self.servers: dict[str, ResourceServer] = {}
        self._config_bytes: bytes | None = None
        #: resource → the kubelet.sock inode it registered with (kubelet.sock mode); None = to register.
        self._registered: dict[str, int | None] = {}
        self.registrations = 0

    # --- config and pools -----------------------------------------------------------------------
    def _read_config(self) -> tuple[bytes, list[ResourceConfig]]:
        path = self.options.config_file
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            return data, parse_config(data.decode("utf-8", "replace"), self.options.resource_prefix)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None

    def _socket_path(self, pool: ResourcePool) -> Path:
        name = f"{pool.config.prefix}_{pool.config.resource_name}.sock"
        return (self.options.plugin_registry_dir or self.options.device_plugin_dir) / name

    def _new_server(self, pool: ResourcePool) -> ResourceServer:
        socket = self._socket_path(pool)
        extra: tuple[object, ...] = ()
        if self.options.plugin_registry_dir is not None:
            extra = (WatcherRegistration(pool.name, socket),)
        return ResourceServer(pool, socket, self.host.paths, self.options.devinfo_dir, self.options.use_cdi, extra)

    def _apply_pools(self, pools: list[ResourcePool], first: bool) -> None:
        wanted = {p.name: p for p in pools if p.devices}
        for pool in pools:
            if not pool.devices:
                log.info("no devices for resource; not served", resource=pool.name)
        for name in [n for n in self.servers if n not in wanted]:
            log.info("resource removed from the config", resource=name)
            self.servers.pop(name).stop(remove_infos=False)
            self._registered.pop(name, None)
        for name, pool in wanted.items():
            old = self.servers.get(name)
            if old is not None and old.pool.signature() == pool.signature():
                continue
            if old is not None:
                log.info("resource changed; serving it again", resource=name)
                old.stop(remove_infos=False)
            server = self._new_server(pool)
            if first:
                deviceinfo.remove_infos(self.options.devinfo_dir, name)
            if self.options.use_cdi:
                cdi.write_spec(self.options.cdi_dir, pool, self.host.paths)
            server.start()
            self.servers[name] = server
            self._registered[name] = None
        self._register_pending()

    def load(self) -> None:
        """The first load: a config error here ends the process (raises ConfigError)."""
        data, configs = self._read_config()
        self._config_bytes = data
        if self.options.use_cdi:
            cdi.remove_specs(self.options.cdi_dir)
        pools = build_pools(configs, discover_devices(self.host))
        self._apply_pools(pools, first=True)

    def check_config(self) -> bool:
        """Reload when the file's bytes changed; True if the pools were rebuilt."""
        try:
            data = self.options.config_file.read_bytes()
        except OSError as exc:
            log.warning("cannot read the config file; keeping the running resources",
                        path=str(self.options.config_file), error=str(exc))
            return False
        if data == self._config_bytes:
            return False
        self._config_bytes = data
        try:
            _data, configs = self._read_config()
        except ConfigError as exc:
            log.error("new config refused; keeping the running resources", error=str(exc))
            return False
        log.info("config changed; reloading", path=str(self.options.config_file))
        self._apply_pools(build_pools(configs, discover_devices(self.host)), first=False)
        return True

    # --- kubelet ---------------------------------------------------------------------------------
    @property
    def kubelet_socket(self) -> Path:
        return self.options.device_plugin_dir / KUBELET_SOCKET

    def _register_pending(self) -> None:
        if self.options.plugin_registry_dir is not None:
            return  # the kubelet's plugin watcher comes to us
        for name, server in self.servers.items():
            if self._registered.get(name) is not None:
                continue
            inode = _inode(self.kubelet_socket)
            if inode is None:
                log.info("kubelet.sock not there yet; will register later", resource=name)
                return
            try:
                register(self.kubelet_socket, server.socket.name, name)
            except KubeletApiError as exc:
                log.warning("registration failed; will retry", resource=name, error=str(exc))
                continue
            self._registered[name] = inode
            self.registrations += 1

    def check_sockets(self) -> list[str]:
        """kubelet.sock mode: serve again and re-register what a kubelet restart cut off; their names."""
        if self.options.plugin_registry_dir is not None:
            return []
        restarted = []
        kubelet_inode = _inode(self.kubelet_socket)
        for name, server in self.servers.items():
            registered = self._registered.get(name)
            gone = not server.socket_present()
            if gone or (registered is not None and kubelet_inode is not None and kubelet_inode != registered):
                log.info("kubelet restarted (plugin socket removed or kubelet.sock replaced); serving again",
                         resource=name, socket_removed=gone)
                server.stop(remove_infos=False)
                server.start()
                self._registered[name] = None
                restarted.append(name)
        self._register_pending()
        return restarted

    # --- health ----------------------------------------------------------------------------------
    def check_health(self) -> None:
        try:
            now = {d.pci: d for d in discover_devices(self.host)}
        except Exception as exc:  # discovery of a host in flux; try again next time
            log.warning("host discovery failed; health unchanged", error=str(exc))
            return
        for server in self.servers.values():
            server.set_health(health_of(server.pool, now))

    # --- the loop --------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        try:
            self.load()
            next_health = time.monotonic() + self.options.health_interval
            while not stop.wait(self.options.watch_interval):
                self.check_config()
                self.check_sockets()
                if time.monotonic() >= next_health:
                    self.check_health()
                    next_health = time.monotonic() + self.options.health_interval
        finally:
            self.close()

    def close(self) -> None:
        for server in self.servers.values():
            server.stop(remove_infos=True)
        self.servers.clear()
        if self.options.use_cdi:
            cdi.remove_specs(self.options.cdi_dir)
        self.host.close()
