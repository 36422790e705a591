"""`sriovop config-daemon service --phase pre|post`: the configuration run by the host's systemd units at
boot in systemd configuration mode (upstream's `sriov-network-config-daemon service`).

- pre (`sriov-config.service`, before NetworkManager/systemd-networkd and kubelet): removes a stale result,
  creates the PFs' VFs (eSwitch mode, MTU, udev rules) and leaves the VFs unbound, so the network
  manager never sees half-configured VF netdevs; writes `InProgress`, or `Failed` with `pre: <reason>`.
- post (`sriov-config-post-network.service`, after the network is online, before kubelet): runs only when
  the pre phase left `InProgress` (else `Failed` with `post: unexpected result of the pre phase ...`),
  configures the VFs (drivers, MACs, MTUs, vDPA) and the managed OVS bridges; writes `Succeeded`, or
  `Failed` with `post: <reason>`.
The spec comes from the config file the daemon wrote, the NIC list from the supported-NIC file; the
config daemon pod only reports the result file in the NodeState.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import structlog

from sriovop.api.v1 import consts
from sriovop.host.apply import ApplyOptions
from sriovop.host.host import Host
from sriovop.host.kernel_access import KernelAccess
from sriovop.host.paths import HostPaths
from sriovop.host.plugins.generic import GenericPlugin
from sriovop.host.systemd_files import Result, SystemdFiles

log = structlog.get_logger(__name__)

PHASE_PRE = "pre"
PHASE_POST = "post"


def run_phase(phase: str, root: Path, options: ApplyOptions | None = None, *,
              kernel: KernelAccess | None = None) -> Result:
    """Run one phase against the host at `root` (its kernel reached through `kernel`, default this
    machine's) and record its result; returns what was written."""
    if phase not in (PHASE_PRE, PHASE_POST):
        raise ValueError(f"--phase: {phase!r} is not {PHASE_PRE} or {PHASE_POST}")
    files = SystemdFiles(HostPaths.at(root))
    try:
        _run(phase, root, files, options or ApplyOptions(), kernel)
    except Exception as exc:
        result = Result(consts.SYNC_STATUS_FAILED, f"{phase}: {exc or type(exc).__name__}")
        log.error("sriov config service failed", phase=phase, error=result.last_sync_error)
    else:
        result = Result(consts.SYNC_STATUS_IN_PROGRESS if phase == PHASE_PRE else consts.SYNC_STATUS_SUCCEEDED)
        log.info("sriov config service succeeded", phase=phase, sync_status=result.sync_status)
    files.write_result(result)
    return result


def _run(phase: str, root: Path, files: SystemdFiles, options: ApplyOptions, kernel: KernelAccess | None) -> None:
    if phase == PHASE_PRE:
        files.remove_result()  # never let the post phase read a result from an earlier boot
    else:
        pre = files.read_result()
        if pre is None or pre.sync_status != consts.SYNC_STATUS_IN_PROGRESS:
            seen, error = (pre.sync_status, pre.last_sync_error) if pre else ("missing", "")
            raise RuntimeError(f"unexpected result of the pre phase: {seen}, syncError: {error}")
    config = files.read_config()
    supported = files.read_supported_nics()
    platform = str(config.get("platformType") or "baremetal")
    if platform != "baremetal":
        raise RuntimeError(f"platformType {platform!r}: the systemd mode runs on bare metal only here")
    options = dataclasses.replace(
        options, skip_vf_configuration=phase == PHASE_PRE,
        manage_software_bridges=bool(config.get("manageSoftwareBridges")) and phase == PHASE_POST,
        ovsdb_socket=str(config.get("ovsdbSocketPath") or ""))
    spec = dict(config.get("spec") or {})
    if phase == PHASE_PRE:
        spec.pop("bridges", None)  # Open vSwitch is not running yet; the post phase configures bridges
    with Host(root, dev_mode=bool(config.get("unsupportedNics")), supported=supported, kernel=kernel) as host:
        host.init()
        plugin = GenericPlugin(host, options=options)
        status: dict[str, object] = {"interfaces": host.discover()}
        if plugin.bridges is not None:
            status["bridges"] = {"ovs": plugin.bridges.status()}
        plugin.on_node_state_change({"spec": spec, "status": status})
        plugin.apply()
