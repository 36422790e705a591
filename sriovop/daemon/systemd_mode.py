"""The pod's side of the systemd configuration mode: it only supervises (upstream's daemon with
`--use-systemd-service`).

Per pass: install/refresh the two units (a changed unit needs a reboot), write the supported-NIC file and
the config file from the NodeState spec; a changed config removes the old result and needs a drain and a
reboot (the host's services apply it at boot), as does a spec with interfaces that no service has run for
yet (no result file). The host is never configured by the pod itself; the NodeState's syncStatus and
lastSyncError are the result file's (pre phase only: InProgress). In daemon mode the files of a former
systemd mode are removed at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.host import Host
from sriovop.host.paths import HostPaths
from sriovop.host.systemd_files import PRE_UNIT, Result, SystemdFiles

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SystemdDecision:
    reboot: bool
    reason: str = ""


class SystemdMode:
    def __init__(self, *, platform: str, dev_mode: bool, manage_software_bridges: bool, ovsdb_socket: str) -> None:
        self.platform = platform
        self.dev_mode = dev_mode
        self.manage_software_bridges = manage_software_bridges
        self.ovsdb_socket = ovsdb_socket
        self._launcher_installed = False

    def decide(self, host: Host, spec: dict[str, Any]) -> SystemdDecision:
        """Write what the services need; say whether the node must reboot to apply it."""
        files = SystemdFiles(host.paths)
        if not self._launcher_installed:  # once per daemon process: the image's code for the next boot
            files.install_launcher()
            self._launcher_installed = True
        units_changed = files.install_units()
        files.write_supported_nics(host.discovery_options.supported)
        changed = files.write_config(spec, unsupported_nics=self.dev_mode, platform=self.platform,
                                     manage_software_bridges=self.manage_software_bridges,
                                     ovsdb_socket=self.ovsdb_socket)
        if changed:
            files.remove_result()
        result = files.read_result()
        if changed:
            return SystemdDecision(True, "systemd mode: the configuration changed; sriov-config services apply "
                                         "it at the next boot")
        if units_changed and spec.get("interfaces"):
            return SystemdDecision(True, f"systemd mode: {PRE_UNIT} and its post-network unit were installed "
                                         "or updated")
        if result is None and spec.get("interfaces"):
            return SystemdDecision(True, "systemd mode: no result from the sriov-config services yet")
        return SystemdDecision(False)

    @staticmethod
    def result(host: Host) -> Result:
        """The services' result as the NodeState reports it (no file: nothing to apply, Succeeded)."""
        found = SystemdFiles(host.paths).read_result()
        if found is None:
            return Result(consts.SYNC_STATUS_SUCCEEDED)
        return found


def clean_systemd_files(paths: HostPaths) -> list[str]:
    """Daemon mode start-up: remove a former systemd mode's units, config, result and launcher."""
    removed = SystemdFiles(paths).clean()
    if removed:
        log.info("removed the files of a former systemd configuration mode", files=removed)
    return removed
