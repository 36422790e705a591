"""What one config daemon needs to know: who it is, where the host is, and how fast to retry.

Defaults are upstream's (30 s drift requeue, 2 min sysfs write timeout, ...); tests shorten them
through the command's flags rather than through hidden globals.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.host.apply import ApplyOptions

#: Upstream's DaemonRequeueTime: how often a configured node re-checks the host for drift.
DEFAULT_REQUEUE_AFTER = 30.0
CONTAINER_HOST_ROOT = "/host"


def in_container() -> bool:
    """Best effort: the markers container runtimes leave, or a pod's service environment."""
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    try:
        cgroup = Path("/proc/1/cgroup").read_text()
    except OSError:
        return False
    return any(marker in cgroup for marker in ("kubepods", "docker", "containerd", "crio", "libpod"))


def default_host_root() -> str:
    """`/host` when running in a container that has the host's `/` mounted there (the DaemonSet does),
    else `/` (the daemon running directly on a host)."""
    if Path(CONTAINER_HOST_ROOT).is_dir() and in_container():
        return CONTAINER_HOST_ROOT
    return "/"


def env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("true", "1", "yes")


@dataclass
class DaemonSettings:
    node_name: str
    namespace: str = consts.DEFAULT_OPERATOR_NAMESPACE
    host_root: Path = Path("/")
    #: Operator state on the host (PF records, applied generation); relative to the host root.
    state_dir: str | None = None
    dev_mode: bool = False
    disable_plugins: tuple[str, ...] = ()
    use_external_drainer: bool = False
    #: Reboot a real host (chroot + systemd-run, as upstream) when the configuration needs one.
    #: A simulated host is never rebooted: the need is reported in status and an Event instead.
    reboot: bool = True
    #: configurationMode systemd (--use-systemd-service): the host's sriov-config services apply the spec
    #: at boot; the daemon writes their input, requests the reboot and reports their result.
    systemd_mode: bool = False
    #: The reboot guard: the same reboot reasons after this many reboots fail the node instead.
    reboot_limit: int = 2
    #: Replaces upstream's `systemd-run ... reboot` (hosts without systemd, test harnesses).
    reboot_command: str = ""
    requeue_after: float = DEFAULT_REQUEUE_AFTER
    #: Backoff of a failing reconcile (apply errors, API errors): base doubles up to max per retry.
    retry_base_delay: float = 1.0
    retry_max_delay: float = 300.0
    #: Backoff cap while waiting at start-up for the API server, the Node and the operator objects.
    startup_max_delay: float = 30.0
    metrics_bind_address: str | None = None
    apply_options: ApplyOptions = field(default_factory=ApplyOptions)
    #: Upstream's 2 min bound on waiting for a replacement device-plugin pod and for its wait mark.
    device_plugin_wait_timeout: float = 120.0
    device_plugin_poll_interval: float = 1.0

    def __post_init__(self) -> None:
        if not self.node_name:
            raise ValueError("node name: required (--node-name or $NODE_NAME)")
        if not self.namespace:
            raise ValueError("namespace: required (--namespace or $NAMESPACE)")
        for name in ("requeue_after", "retry_base_delay", "retry_max_delay", "startup_max_delay",
                     "device_plugin_wait_timeout", "device_plugin_poll_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be greater than zero, got {getattr(self, name)!r}")
        if self.reboot_limit < 1:
            raise ValueError(f"reboot_limit: must be at least 1, got {self.reboot_limit!r}")
        if self.retry_max_delay < self.retry_base_delay:
            raise ValueError("retry_max_delay: must not be below retry_base_delay")


@dataclass
class LiveConfig:
    """Values from SriovOperatorConfig `default` that change while the daemon runs."""

    disable_drain: bool = False
    log_level: str = "info"
    feature_gates: dict[str, bool] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def gate(self, name: str) -> bool:
        with self.lock:
            return self.feature_gates.get(name, consts.FEATURE_GATE_DEFAULTS.get(name, False))
