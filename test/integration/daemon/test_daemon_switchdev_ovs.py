"""The daemon against a simulated ConnectX-6 Dx host (mlx5-like eSwitch) and a real OVSDB (ovsdb-server, no
vswitchd): a switchdev spec with a managed OVS bridge becomes representors and a bridge reported in the
NodeState, and deleting the policy goes back to legacy and removes the bridge. Real kube-apiserver, the
operator's node-policy and drain controllers; the host is the simulated SR-IOV host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.runtime.kinds import NODE
from sriovop.sim.host import SimHost
from sriovop.sim.ovs import SimOvsdb
from test.support.controllers_harness import node_policy_controller
from test.support.daemon_harness import client_for, get_state, prepare_cluster, running_daemon
from test.support.host_sim import FAST
from test.support.operator_drain import running_drain_manager
from test.support.poll import wait_for


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
    """From a policy (the operator's node-policy controller, feature gate manageSoftwareBridges) to
    representors and an OVS bridge, and back when the policy is deleted."""
    sim, ovs = cx6
    pf = sim.describe()["pfs"][0]
    pci, name = pf["pciAddress"], pf["name"]
    client = client_for(kubeconfig)
    prepare_cluster(client, namespace, node_name, node_state=False,
                    opconfig={"featureGates": {consts.FG_MANAGE_SOFTWARE_BRIDGES: True}})
    client.patch(NODE, node_name, {"metadata": {"labels": {"node-role.kubernetes.io/worker": "",
                                                           "kubernetes.io/os": "linux"}}})
    policy = {"metadata": {"name": "switchdev-ovs"}, "spec": {
        "resourceName": "sw", "numVfs": 2, "mtu": 9000, "eSwitchMode": "switchdev", "deviceType": "netdevice",
        "nicSelector": {"vendor": "15b3", "pfNames": [name]}, "nodeSelector": {"kubernetes.io/hostname": node_name},
        "bridge": {"ovs": {"bridge": {"externalIDs": {"team": "net"}},
                           "uplink": {"interface": {"options": {"n_rxq": "2"}}}}}}}
    bridge = {"name": "br-" + pci.replace(":", "_"), "bridge": {"externalIDs": {"team": "net"}},
              "uplinks": [{"pciAddress": pci, "name": name,
                           "interface": {"options": {"n_rxq": "2"}, "mtuRequest": 9000}}]}
    options = replace(FAST, manage_software_bridges=True)
    with node_policy_controller(kubeconfig, namespace, stale_delay_minutes=0), \
            running_drain_manager(kubeconfig, namespace), \
            running_daemon(kubeconfig, namespace, node_name, sim.root, apply_options=options,
                           disable_plugins=("mellanox",)):  # no firmware tool on the simulated host
        wait_for(lambda: (get_state(client, namespace, node_name).get("status") or {}).get("interfaces"), 60,
                 "the daemon's first report")
        client.create(SRIOV_NETWORK_NODE_POLICY, policy, namespace)

        def applied() -> dict | None:
            st = get_state(client, namespace, node_name)
            status = st.get("status") or {}
            return st if status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and status.get("bridges") else None
        state = wait_for(applied, 90, "Succeeded with status.bridges")
        assert state["spec"]["bridges"] == {"ovs": [bridge]}
        assert state["status"]["bridges"] == {"ovs": [bridge]}
        iface = state["status"]["interfaces"][0]
        assert iface["eSwitchMode"] == "switchdev" and iface["mtu"] == 9000
        assert [v["representorName"] for v in iface["Vfs"]] == [f"{name}_0", f"{name}_1"]
        # Checked from outside the daemon's code: ovs-vsctl on the same database.
        assert ovs.vsctl("list-ports", bridge["name"]).split() == [name]
        row = json.loads(ovs.vsctl("--format=json", "--columns=mtu_request,options", "list", "Interface", name))
        assert row["data"] == [[9000, ["map", [["n_rxq", "2"]]]]]

        # The policy is deleted: empty spec, drain, legacy, bridge removed.
        client.delete(SRIOV_NETWORK_NODE_POLICY, "switchdev-ovs", namespace)

        def reset() -> dict | None:
            st = get_state(client, namespace, node_name)
            status = st.get("status") or {}
            ifaces = status.get("interfaces") or []
            done = (not (st.get("spec") or {}).get("interfaces") and not (st.get("spec") or {}).get("bridges")
                    and status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and not status.get("bridges")
                    and ifaces and ifaces[0].get("eSwitchMode") == "legacy" and not ifaces[0].get("numVfs"))
            return st if done else None
        wait_for(reset, 90, "reset to legacy with no bridge")
        assert ovs.vsctl("list-br").split() == []
        assert sim.kernel.eswitch.states[pci].mode == "legacy" and sim.kernel.eswitch.states[pci].reps == {}
