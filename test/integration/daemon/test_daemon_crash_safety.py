"""`sriovop config-daemon` SIGKILLed before each named apply step (SRIOVOP_CRASH_AT_STEP), then started
again: it converges to the spec, no VF is left half-configured, and it reports Succeeded."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from sriovop.api.v1 import consts
from sriovop.host import steps as S
from sriovop.host.paths import HostPaths
from sriovop.host.records import PfRecords
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    DaemonProcess,
    assert_host_matches,
    client_for,
    full_spec,
    get_state,
    pf_spec,
    prepare_cluster,
    set_spec,
    wait_sync,
)
from test.support.poll import wait_for


def assert_status_complete(state: dict, spec: list[dict]) -> None:
    by_pci = {i["pciAddress"]: i for i in state["status"]["interfaces"]}
    for want in spec:
        vfs = by_pci[want["pciAddress"]].get("Vfs") or []
        assert len(vfs) == want["numVfs"] and all(v.get("driver") for v in vfs), vfs


@pytest.mark.parametrize("step", S.APPLY_STEPS)
def test_killed_at_apply_step_then_restarted_converges(kubeconfig: Path, namespace: str, node_name: str,
                                                      sim: SimHost, tmp_path: Path, step: str) -> None:
    client = client_for(kubeconfig)
    spec = full_spec(sim)
    prepare_cluster(client, namespace, node_name, spec={"interfaces": spec})
    log = tmp_path / "daemon.log"
    first = DaemonProcess(kubeconfig, namespace, node_name, sim.root, log, crash_at=step)
    try:
        code = first.wait_exit(60)
    finally:
        first.stop()
    assert code == -signal.SIGKILL, f"not killed at {step}:\n{first.log_text()[-3000:]}"
    assert get_state(client, namespace, node_name)["status"]["syncStatus"] != consts.SYNC_STATUS_SUCCEEDED

    second = DaemonProcess(kubeconfig, namespace, node_name, sim.root, log)
    try:
        wait_for(lambda: sim.kernel.pfs[spec[0]["pciAddress"]].numvfs == 4
                 and sim.kernel.pfs[spec[1]["pciAddress"]].numvfs == 2, 60, "VFs after the restart")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert second.alive(), second.log_text()[-3000:]
    finally:
        assert second.stop() == 0, second.log_text()[-3000:]
    assert_host_matches(sim, spec)
    assert_status_complete(state, spec)
    assert not state["status"].get("lastSyncError")


@pytest.mark.parametrize("step", S.RESET_STEPS)
def test_killed_while_resetting_a_pf_then_restarted_converges(kubeconfig: Path, namespace: str, node_name: str,
                                                             sim: SimHost, tmp_path: Path, step: str) -> None:
    client = client_for(kubeconfig)
    xxv, igb = sim.describe()["pfs"]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2), pf_spec(igb, 3, mtu=2000)]},
                    opconfig={"disableDrain": True})
    log = tmp_path / "daemon.log"
    setup = DaemonProcess(kubeconfig, namespace, node_name, sim.root, log)
    try:
        wait_for(lambda: sim.kernel.pfs[igb["pciAddress"]].numvfs == 3, 60, "igb configured")
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
    finally:
        assert setup.stop() == 0
    set_spec(client, namespace, node_name, [pf_spec(xxv, 2)])  # the 82576 leaves the spec: reset it

    crashing = DaemonProcess(kubeconfig, namespace, node_name, sim.root, log, crash_at=step)
    try:
        code = crashing.wait_exit(60)
    finally:
        crashing.stop()
    assert code == -signal.SIGKILL, f"not killed at {step}:\n{crashing.log_text()[-3000:]}"

    again = DaemonProcess(kubeconfig, namespace, node_name, sim.root, log)
    try:
        wait_for(lambda: not PfRecords(HostPaths.at(sim.root)).exists(igb["pciAddress"]), 60, "igb record removed")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
    finally:
        assert again.stop() == 0, again.log_text()[-3000:]
    assert sim.kernel.pfs[igb["pciAddress"]].numvfs == 0
    assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 2
    by_pci = {i["pciAddress"]: i for i in state["status"]["interfaces"]}
    assert by_pci[igb["pciAddress"]].get("numVfs", 0) == 0 and by_pci[igb["pciAddress"]]["mtu"] == 1500
