"""The daemon against a simulated ConnectX-6 Dx host (mlx5-like eSwitch) and a real OVSDB (ovsdb-server, no
vswitchd): a switchdev spec with a managed OVS bridge becomes representors and a bridge reported in the
NodeState, and removing it goes back to legacy and removes the bridge. Real kube-apiserver, real drain
controller; the host is the simulated SR-IOV host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.host.sim import SimHost
from sriovop.host.sim_ovs import SimOvsdb
from test.support.daemon_harness import client_for, get_state, prepare_cluster, running_daemon, wait_for
from test.support.host_sim import FAST
from test.support.operator_drain import running_drain_manager


@pytest.fixture
def cx6(tmp_path: Path) -> Iterator[tuple[SimHost, SimOvsdb]]:
    sim = SimHost(tmp_path / "host", ["cx6dx:1"]).start()
    ovs = SimOvsdb(sim.root)
    try:
        ovs.start()
        yield sim, ovs
    finally:
        ovs.stop()
        sim.stop()


def test_switchdev_with_managed_bridge_reported_then_removed(kubeconfig: Path, namespace: str, node_name: str,
                                                              cx6: tuple[SimHost, SimOvsdb]) -> None:
    sim, ovs = cx6
    pf = sim.describe()["pfs"][0]
    pci, name = pf["pciAddress"], pf["name"]
    bridge = {"name": "br-" + pci.replace(":", "_"),
              "uplinks": [{"pciAddress": pci, "name": name, "interface": {"mtuRequest": 9000}}]}
    spec = {"interfaces": [{"pciAddress": pci, "name": name, "numVfs": 2, "mtu": 9000, "eSwitchMode": "switchdev",
                            "vfGroups": [{"vfRange": "0-1", "deviceType": "netdevice", "resourceName": "sw",
                                          "policyName": "p"}]}],
            "bridges": {"ovs": [bridge]}}
    client = client_for(kubeconfig)
    prepare_cluster(client, namespace, node_name, spec=spec)
    options = replace(FAST, manage_software_bridges=True)
    with running_drain_manager(kubeconfig, namespace), \
            running_daemon(kubeconfig, namespace, node_name, sim.root, apply_options=options,
                           disable_plugins=("mellanox",)):  # no firmware tool on the simulated host
        def applied() -> dict | None:
            st = get_state(client, namespace, node_name)
            status = st.get("status") or {}
            return st if status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and status.get("bridges") else None
        state = wait_for(applied, 60, "Succeeded with status.bridges")
        iface = state["status"]["interfaces"][0]
        assert iface["eSwitchMode"] == "switchdev"
        assert [v["representorName"] for v in iface["Vfs"]] == [f"{name}_0", f"{name}_1"]
        assert state["status"]["bridges"] == {"ovs": [bridge]}
        # Checked from outside the daemon's code: ovs-vsctl on the same database.
        assert ovs.vsctl("list-ports", bridge["name"]).split() == [name]
        mtu = json.loads(ovs.vsctl("--format=json", "--columns=mtu_request", "list", "Interface", name))
        assert mtu["data"] == [[9000]]

        # The policy goes away: the operator writes an empty spec. Drain, legacy, bridge removed.
        client.patch(SRIOV_NETWORK_NODE_STATE, node_name, {"spec": {"interfaces": None, "bridges": None}},
                     namespace=namespace)

        def reset() -> dict | None:
            st = get_state(client, namespace, node_name)
            status = st.get("status") or {}
            ifaces = status.get("interfaces") or []
            done = (status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and not status.get("bridges")
                    and ifaces and ifaces[0].get("eSwitchMode") == "legacy" and not ifaces[0].get("numVfs"))
            return st if done else None
        wait_for(reset, 60, "reset to legacy with no bridge")
        assert ovs.vsctl("list-br").split() == []
        assert sim.kernel.eswitch.states[pci].mode == "legacy" and sim.kernel.eswitch.states[pci].reps == {}
