"""The daemon end to end: NodeState spec → simulated host configured → status Succeeded, and the drain
handshake guarding changes to PFs that already have VFs."""

from __future__ import annotations

import time
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.runtime.kinds import EVENT, NODE
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    annotation,
    assert_host_matches,
    client_for,
    full_spec,
    get_state,
    pf_spec,
    prepare_cluster,
    running_daemon,
    set_current,
    set_spec,
    wait_sync,
)
from test.support.operator_drain import running_drain_manager
from test.support.poll import wait_for


def assert_status_lists_every_vf(state: dict, sim: SimHost, spec: list[dict]) -> None:
    by_pci = {i["pciAddress"]: i for i in state["status"]["interfaces"]}
    for want in spec:
        iface = by_pci[want["pciAddress"]]
        assert iface["numVfs"] == want["numVfs"]
        pf = sim.kernel.pfs[want["pciAddress"]]
        assert [v["pciAddress"] for v in iface["Vfs"]] == [pf.vfs[i].pci for i in range(want["numVfs"])]
        assert [v["vfID"] for v in iface["Vfs"]] == list(range(want["numVfs"]))
        assert all(v["driver"] for v in iface["Vfs"])
    assert by_pci[spec[0]["pciAddress"]]["mtu"] == 9000
    assert [v.get("mtu") for v in by_pci[spec[0]["pciAddress"]]["Vfs"][:2]] == [9000, 9000]


def test_spec_is_applied_and_reported(kubeconfig: Path, namespace: str, node_name: str, sim: SimHost) -> None:
    client = client_for(kubeconfig)
    spec = full_spec(sim)
    prepare_cluster(client, namespace, node_name, spec={"interfaces": spec})
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert_host_matches(sim, spec)
        assert_status_lists_every_vf(state, sim, spec)
        assert not state["status"].get("lastSyncError")
        # 0 → N VFs needs no drain: the handshake stayed Idle.
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
        node = client.get(NODE, node_name)
        assert (node["metadata"].get("annotations") or {}).get(consts.NODE_DRAIN_ANNOTATION, "Idle") == "Idle"
        assert daemon.reconciler is not None and daemon.reconciler.applies == 1
    # The SyncStatusChanged events of InProgress and Succeeded were recorded on the NodeState.
    events = [e for e in client.list(EVENT, namespace) if e["involvedObject"]["name"] == node_name]
    messages = [e["message"] for e in events if e["reason"] == "SyncStatusChanged"]
    assert any("to: Succeeded" in m for m in messages), messages
    assert all(e["source"]["component"] == "config-daemon" for e in events)


def test_changing_vfs_waits_for_drain_complete(kubeconfig: Path, namespace: str, node_name: str,
                                               sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root):
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        pf = sim.kernel.pfs[xxv["pciAddress"]]
        assert pf.numvfs == 4

        gen = set_spec(client, namespace, node_name, [pf_spec(xxv, 2)])["metadata"]["generation"]
        state = wait_for(lambda: (s := get_state(client, namespace, node_name)) and annotation(
            s, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED and s, 30, "Drain_Required")
        node = client.get(NODE, node_name)
        assert node["metadata"]["annotations"][consts.NODE_DRAIN_ANNOTATION] == consts.DRAIN_REQUIRED
        assert state["status"]["syncStatus"] == consts.SYNC_STATUS_IN_PROGRESS
        # Several drift/requeue cycles (1 s in tests) later the host is still untouched...
        time.sleep(2.5)
        assert pf.numvfs == 4
        set_current(client, namespace, node_name, consts.DRAINING)
        time.sleep(1.5)
        assert pf.numvfs == 4
        assert get_state(client, namespace, node_name)["status"]["syncStatus"] == consts.SYNC_STATUS_IN_PROGRESS
        # ...and changes only once the drain controller says DrainComplete.
        set_current(client, namespace, node_name, consts.DRAIN_COMPLETE)
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED, generation=gen)
        assert pf.numvfs == 2
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
        node = client.get(NODE, node_name)
        assert node["metadata"]["annotations"][consts.NODE_DRAIN_ANNOTATION] == consts.DRAIN_IDLE


def test_real_drain_controller_answers(kubeconfig: Path, namespace: str, node_name: str, sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 3)]})
    with running_drain_manager(kubeconfig, namespace), \
            running_daemon(kubeconfig, namespace, node_name, sim.root):
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        set_spec(client, namespace, node_name, [pf_spec(xxv, 5)])
        # Succeeded is also what the previous generation reported: wait for the host, then the status.
        wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 5, 30, "5 VFs on the host")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert state["status"]["interfaces"][0]["numVfs"] == 5
        # The controller saw the request (it drained) and, after the daemon's Idle, returned to Idle.
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE, 30,
                 "current-state back to Idle")
        node = client.get(NODE, node_name)
        assert not node["spec"].get("unschedulable"), "the node must be uncordoned after the drain"
