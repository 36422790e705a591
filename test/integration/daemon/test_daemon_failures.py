"""Bad host input: the daemon reports Failed with the PF and the step, keeps running, and recovers
once the fault is gone (retries with backoff, no restart)."""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.daemon.app import Daemon
from sriovop.runtime.kinds import EVENT
from sriovop.sim.host import SimHost
from test.support.daemon_harness import client_for, get_state, pf_spec, prepare_cluster, running_daemon, wait_sync
from test.support.poll import wait_for


def failed_with(client, namespace: str, node: str, *needles: str) -> dict:
    def check() -> dict | None:
        st = get_state(client, namespace, node).get("status") or {}
        err = st.get("lastSyncError") or ""
        return st if st.get("syncStatus") == consts.SYNC_STATUS_FAILED and all(n in err for n in needles) else None
    return wait_for(check, 30, f"Failed with {needles}")  # type: ignore[no-any-return]


def assert_alive(daemon: Daemon) -> None:
    assert daemon.reconciler is not None and daemon.controller is not None
    assert not daemon.controller.queue.shutting_down()


def test_garbage_totalvfs_fails_then_recovers(kubeconfig: Path, namespace: str, node_name: str,
                                              sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    sim.fault(xxv["pciAddress"], garbage_totalvfs="sixty-four\x00")
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        status = failed_with(client, namespace, node_name, f"pf {xxv['pciAddress']}", "step check-totalvfs",
                             "sriov_totalvfs is not an integer")
        assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 0
        assert status["interfaces"], "the status still lists what the host has"
        assert_alive(daemon)
        sim.fault(xxv["pciAddress"], garbage_totalvfs="64")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert not state["status"].get("lastSyncError")
        assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 4
    events = [e["message"] for e in client.list(EVENT, namespace) if e["reason"] == "SyncStatusChanged"]
    assert any("to: Failed. Last Error: pf " in m for m in events), events


def test_missing_pf_driver_fails_then_recovers(kubeconfig: Path, namespace: str, node_name: str,
                                               sim: SimHost) -> None:
    client = client_for(kubeconfig)
    igb = sim.describe()["pfs"][1]
    sim.fault(igb["pciAddress"], drop_pf_driver=True)
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(igb, 3)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        failed_with(client, namespace, node_name, f"pf {igb['pciAddress']}", "step write-numvfs",
                    "no driver bound")
        assert_alive(daemon)
        sim.kernel.write("sys/bus/pci/drivers_probe", igb["pciAddress"])  # the driver comes back
        wait_for(lambda: sim.kernel.pfs[igb["pciAddress"]].numvfs == 3, 30, "3 VFs once the driver is back")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert [v["driver"] for v in state["status"]["interfaces"][1]["Vfs"]] == ["igbvf"] * 3


def test_pf_vanishing_mid_apply_fails_then_recovers_after_reboot(kubeconfig: Path, namespace: str,
                                                                node_name: str, sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv, igb = sim.describe()["pfs"]
    sim.fault(xxv["pciAddress"], vanish_after_numvfs=True)
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4), pf_spec(igb, 2)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        status = failed_with(client, namespace, node_name, f"pf {xxv['pciAddress']}")
        assert "step wait-vfs" in status["lastSyncError"] or "step find-pf" in status["lastSyncError"]
        # Retries keep failing on the missing PF (and say so), the daemon keeps running.
        failed_with(client, namespace, node_name, f"pf {xxv['pciAddress']}: step find-pf", "not present")
        assert_alive(daemon)
        assert xxv["pciAddress"] not in {i["pciAddress"] for i in status["interfaces"]}
        sim.reboot()  # the NIC is back (and the fault gone); the daemon reopens the new simulator
        wait_for(lambda: sim.kernel.pfs.get(xxv["pciAddress"]) is not None
                 and sim.kernel.pfs[xxv["pciAddress"]].numvfs == 4, 30, "the PF back with 4 VFs")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert [i["numVfs"] for i in state["status"]["interfaces"]] == [4, 2]
        assert sim.kernel.pfs[igb["pciAddress"]].numvfs == 2
