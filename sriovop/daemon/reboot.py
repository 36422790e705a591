"""Rebooting the node, as upstream does it: a transient systemd unit on the host that stops the
kubelet and reboots (run through chroot into the host root, so it works from the container)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

REBOOT_UNIT = "sriov-network-config-daemon-reboot"


def reboot_command(root: Path, command: str = "") -> list[str]:
    """Upstream's transient unit, or `command` (run by /bin/sh in the host root) when given."""
    if command:
        cmd = ["/bin/sh", "-c", command]
    else:
        cmd = ["systemd-run", "--unit", REBOOT_UNIT, "--description", "sriov-network-config-daemon reboot node",
               "/bin/sh", "-c", "systemctl stop kubelet.service; reboot"]
    return cmd if str(root) == "/" else ["chroot", str(root), *cmd]


class Rebooter:
    def __init__(self, root: Path, *, enabled: bool, command: str = "") -> None:
        self.root = Path(root)
        self.enabled = enabled
        self.command = command

    def why_not(self, *, simulated: bool) -> str | None:
        """Why `reboot` would not reboot (for the status written before it), or None when it would."""
        if simulated:
            return "not rebooting: the host is simulated (reboot it through the simulator)"
        if not self.enabled:
            return "not rebooting: --no-reboot is set (reboot the node to finish the configuration)"
        return None

    def reboot(self, *, simulated: bool) -> str:
        """Reboot if allowed; returns what was done, for the status message and the Event."""
        skip = self.why_not(simulated=simulated)
        if skip is not None:
            return skip
        cmd = reboot_command(self.root, self.command)
        log.warning("rebooting the node", command=cmd)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise OSError(f"reboot command failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:300]}")
        return "reboot started"
