"""On an OpenStack node (spec.providerID openstack://...) the NodeState reports each passthrough NIC with
its Neutron network as `netFilter`. Host: the simulated SR-IOV host standing in for a VM (its NICs play
the NICs Nova passed in; the metadata is on a mounted config drive)."""

from __future__ import annotations

from pathlib import Path

from sriovop.runtime.kinds import NODE
from test.support.daemon_harness import client_for, get_state, prepare_cluster, running_daemon
from test.support.openstack_vm import NET_A, NET_B, metadata, vm_like_host, write_mounted_config_drive
from test.support.poll import wait_for


def test_node_state_reports_net_filter(kubeconfig: Path, namespace: str, node_name: str, tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with vm_like_host(tmp_path) as (sim, nics):
        write_mounted_config_drive(sim.root, *metadata(nics))
        prepare_cluster(client, namespace, node_name, spec={})
        client.patch(NODE, node_name, {"spec": {"providerID": "openstack:///6c0e5c1e-5a5e-4f1c-9b5e-vm"}})
        with running_daemon(kubeconfig, namespace, node_name, sim.root):
            def reported() -> dict[str, str] | None:
                ifaces = (get_state(client, namespace, node_name).get("status") or {}).get("interfaces") or []
                found = {i["pciAddress"]: i.get("netFilter", "") for i in ifaces}
                return found if len(found) == 2 else None
            found = wait_for(reported, 60, "two interfaces with netFilter in the NodeState")
    assert found == {nics[0]["pciAddress"]: f"openstack/NetworkID:{NET_A}",
                     nics[1]["pciAddress"]: f"openstack/NetworkID:{NET_B}"}
