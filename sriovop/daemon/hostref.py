"""The daemon's handle on the host, reopened when the kernel behind the root was replaced.

A real reboot restarts the daemon too; a simulated host can be "rebooted" under a running daemon (the
demo and the tests do), and its kernel access then reports a new `generation()`.
Opening also writes the initial-state checkpoint once and loads `tun` and `vhost_net` (best effort), as
upstream's Init does: pods of needVhostNet policies get /dev/net/tun and /dev/vhost-net from the device
plugin, which only works once those modules are loaded. A failure is logged with the module's name.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from sriovop.host import Host
from sriovop.host.kernel_access import KernelAccess, RealKernelAccess
from sriovop.host.modules import VHOST_NET_MODULES, Modules
from sriovop.host.nics import SupportedNics
from sriovop.host.paths import HostPaths

log = structlog.get_logger(__name__)


class HostRef:
    def __init__(self, root: Path, *, state_dir: str | None = None, dev_mode: bool = False,
                 supported: SupportedNics | None = None, platform: str = "baremetal",
                 kernel: KernelAccess | None = None) -> None:
        self.root = Path(root)
        self.kernel: KernelAccess = kernel if kernel is not None else RealKernelAccess()
        self.platform = platform
        self.state_dir = state_dir
        self.dev_mode = dev_mode
        self.supported = supported
        self.paths = HostPaths.at(self.root, state_dir=state_dir)
        self._host: Host | None = None
        self._generation: object = None
        self.opened = 0
        #: Modules loaded at open that failed ({name: error}); needVhostNet pods cannot work without them.
        self.module_errors: dict[str, str] = {}

    def get(self) -> Host:
        generation = self.kernel.generation()
        if self._host is not None and generation != self._generation:
            log.info("the host's kernel was replaced (simulated host restarted): reopening it", root=str(self.root))
            self.close()
        if self._host is None:
            host = Host(self.root, state_dir=self.state_dir, dev_mode=self.dev_mode, supported=self.supported,
                        platform=self.platform, kernel=self.kernel)
            try:
                if host.checkpoint.ensure(host.discover()):
                    log.info("initial host state checkpoint written", path=str(host.paths.checkpoint))
                self.module_errors = Modules(host.paths, host.io).try_load(VHOST_NET_MODULES)
            except BaseException:
                host.close()
                raise
            self._host, self._generation = host, generation
            self.opened += 1
        return self._host

    @property
    def simulated(self) -> bool:
        return self.kernel.simulated

    def close(self) -> None:
        if self._host is not None:
            try:
                self._host.close()
            finally:
                self._host = None
