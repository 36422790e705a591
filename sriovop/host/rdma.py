"""The RDMA subsystem's network-namespace mode (SriovNetworkPoolConfig `rdmaMode`, NodeState
`spec.system.rdmaMode`).

`shared`: RDMA devices are visible in every network namespace; `exclusive`: a device lives in one namespace
(rdma-cni moves it into the pod's). Upstream makes the mode persistent with `options ib_core netns_mode=`
in etc/modprobe.d (and the kernel argument `ib_core.netns_mode=`, see kargs.py) and reboots. Here the mode
is also set on the running kernel (`rdma system set netns <mode>`), which the kernel allows while no other
network namespace exists; only when that fails (EBUSY) is a reboot needed. Without ib_core loaded there is
no RDMA device to isolate: the modprobe.d option applies when it loads.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from sriovop.host.kernelio import KernelIO
from sriovop.host.paths import HostPaths

log = structlog.get_logger("sriovop.host.rdma")

MODPROBE_CONF = "sriov_network_operator_modules_config.conf"
MODES = {"shared": 1, "exclusive": 0}
HEADER = "# This file is managed by sriov-network-operator do not edit.\n"


class RdmaSubsystem:
    def __init__(self, paths: HostPaths, io: KernelIO) -> None:
        self.paths = paths
        self.io = io

    @property
    def conf(self) -> Path:
        return self.paths.modprobe_d / MODPROBE_CONF

    def mode(self) -> str | None:
        """The running kernel's mode; None when the RDMA subsystem (ib_core) is not loaded."""
        return self.io.rdma_netns_mode()

    def persist(self, mode: str) -> bool:
        """Write (or, for no mode, remove) the modprobe.d option; True if the file changed."""
        if mode and mode not in MODES:
            raise ValueError(f"spec.system.rdmaMode: {mode!r} is not shared or exclusive")
        if not mode:
            if self.conf.exists():
                self.conf.unlink()
                return True
            return False
        text = f"{HEADER}options ib_core netns_mode={MODES[mode]}\n"
        try:
            if self.conf.read_text() == text:
                return False
        except OSError:
            pass
        self.conf.parent.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(text)
        return True

    def apply(self, mode: str) -> bool:
        """Persist `mode` and set it on the running kernel when possible. True when the running kernel
        has it (or has no RDMA subsystem yet); False when only a reboot can change it."""
        self.persist(mode)
        if not mode:
            return True
        current = self.mode()
        if current is None or current == mode:
            return True
        try:
            self.io.set_rdma_netns_mode(mode)
        except OSError as e:
            log.warning("rdma netns mode cannot change on the running kernel; a reboot is needed",
                        current=current, wanted=mode, error=str(e.strerror or e))
            return False
        log.info("rdma netns mode set", mode=mode, was=current)
        return True
