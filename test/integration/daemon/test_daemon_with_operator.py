"""A policy, the operator's node-policy and drain controllers (in-process) and the daemon: the policy
ends up as VFs on the simulated host, and a policy change goes through a real drain."""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.runtime.kinds import EVENT, NODE
from sriovop.sim.host import SimHost
from test.support.controllers_harness import node_policy_controller
from test.support.daemon_harness import annotation, client_for, get_state, prepare_cluster, running_daemon, wait_sync
from test.support.operator_drain import running_drain_manager
from test.support.poll import wait_for

WORKER = {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}


def test_policy_to_vfs_through_the_operator(kubeconfig: Path, namespace: str, node_name: str,
                                            sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, node_state=False)
    client.patch(NODE, node_name, {"metadata": {"labels": WORKER}})
    policy = {"metadata": {"name": "intel", "namespace": namespace}, "spec": {
        "resourceName": "intelnics", "numVfs": 4, "priority": 10, "deviceType": "netdevice", "mtu": 9000,
        "nicSelector": {"pfNames": [xxv["name"]]}, "nodeSelector": {"kubernetes.io/hostname": node_name}}}
    with node_policy_controller(kubeconfig, namespace, stale_delay_minutes=0), \
            running_drain_manager(kubeconfig, namespace), \
            running_daemon(kubeconfig, namespace, node_name, sim.root):
        # The operator creates the NodeState, the drain controller annotates it, the daemon reports
        # the host; only then can the policy's nicSelector pick the PF.
        client.create(SRIOV_NETWORK_NODE_POLICY, policy, namespace)
        wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 4, 60, "4 VFs from the policy")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        spec = state["spec"]["interfaces"]
        assert [(i["pciAddress"], i["numVfs"], i["mtu"]) for i in spec] == [(xxv["pciAddress"], 4, 9000)]
        assert spec[0]["vfGroups"][0]["resourceName"] == "intelnics"
        pf = sim.kernel.pfs[xxv["pciAddress"]]
        assert all(vf.driver == "iavf" and vf.admin_mac for vf in pf.vfs.values())

        # Fewer VFs: a configured PF with VFs changes, so the real drain controller drains first.
        client.patch(SRIOV_NETWORK_NODE_POLICY, "intel", {"spec": {"numVfs": 2}}, namespace=namespace)
        wait_for(lambda: pf.numvfs == 2 and len(pf.vfs) == 2, 60, "2 VFs after the policy change")
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE, 30,
                 "the drain controller back to Idle")
        assert not client.get(NODE, node_name)["spec"].get("unschedulable")
    reasons = [(e["source"]["component"], e["reason"]) for e in client.list(EVENT, namespace)
               if e["involvedObject"]["name"] == node_name]
    assert ("config-daemon", "DrainRequested") in reasons, reasons
