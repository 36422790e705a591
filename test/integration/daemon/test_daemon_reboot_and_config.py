"""Reboot-needed configurations on a simulated host, and the live operator config (disableDrain)."""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.runtime.kinds import EVENT, NODE
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    annotation,
    client_for,
    get_state,
    pf_spec,
    prepare_cluster,
    running_daemon,
    set_current,
    set_spec,
    wait_sync,
)
from test.support.poll import wait_for


def test_reboot_needed_is_reported_not_done_on_a_simulated_host(kubeconfig: Path, namespace: str,
                                                                node_name: str, tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with SimHost(tmp_path / "host", ["xxv710:1"]) as sim:  # no intel_iommu=on in /proc/cmdline
        xxv = sim.describe()["pfs"][0]
        spec = pf_spec(xxv, 2, groups=[{"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": "0-1"}])
        prepare_cluster(client, namespace, node_name, spec={"interfaces": [spec]})
        with running_daemon(kubeconfig, namespace, node_name, sim.root):
            wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                        consts.NODE_STATE_DRAIN_ANNOTATION) == consts.REBOOT_REQUIRED, 30,
                     "Reboot_Required requested")
            assert client.get(NODE, node_name)["metadata"]["annotations"][consts.NODE_DRAIN_ANNOTATION] == \
                consts.REBOOT_REQUIRED
            set_current(client, namespace, node_name, consts.DRAIN_COMPLETE)

            def reported() -> dict | None:
                st = get_state(client, namespace, node_name)["status"]
                return st if "reboot required" in (st.get("lastSyncError") or "") else None
            status = wait_for(reported, 30, "the reboot need in status")
            assert status["syncStatus"] == consts.SYNC_STATUS_IN_PROGRESS
            assert "intel_iommu=on iommu=pt" in status["lastSyncError"]
            assert "the host is simulated" in status["lastSyncError"]
            assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 0, "nothing applied before the reboot"
            # The recorder writes Events from its own thread: the status above does not wait for it.
            events = wait_for(lambda: [e for e in client.list(EVENT, namespace) if e["reason"] == "RebootRequired"],
                              30, "the RebootRequired Event")
            assert events[0]["type"] == "Warning"

            # The administrator (here: the simulator) reboots with the arguments; the daemon finishes.
            sim.reboot(add_kernel_args=["intel_iommu=on", "iommu=pt"])
            wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 2, 30, "VFs after the reboot")
            state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            assert not state["status"].get("lastSyncError")
            assert [v["driver"] for v in state["status"]["interfaces"][0]["Vfs"]] == ["vfio-pci"] * 2
            assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE


def test_disable_drain_turned_on_live_unblocks_a_waiting_change(kubeconfig: Path, namespace: str,
                                                                node_name: str, sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        set_spec(client, namespace, node_name, [pf_spec(xxv, 1)])
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED, 30, "drain request")
        assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 4
        client.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"disableDrain": True, "logLevel": 2}},
                     namespace=namespace)
        wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 1, 30, "the change applied without a drain")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE
        assert daemon.live.disable_drain and daemon.live.log_level == "debug"


def test_external_drainer_marker_follows_the_setting(kubeconfig: Path, namespace: str, node_name: str,
                                                     sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root, use_external_drainer=True):
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_EXTERNAL_DRAINER_ANNOTATION) == "true", 30, "the marker")
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 2
    # Without USE_EXTERNAL_DRAINER the marker is removed again (only while no drain is under way).
    with running_daemon(kubeconfig, namespace, node_name, sim.root):
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_EXTERNAL_DRAINER_ANNOTATION) is None, 30, "marker removed")
