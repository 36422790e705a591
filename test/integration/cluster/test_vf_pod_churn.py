"""100 pods with a VF each, created and deleted through the whole real chain, with a kubelet restart, a
device-plugin pod restart and one DEL after its pod's network namespace is gone on the way.

Host: the simulated SR-IOV host (4 VFs of a simulated E810; VF netdevs, pod namespaces and moves real)
under the real kubelet, scheduler, containerd and runc of the session's 2-node cluster (node
sriovop-node-1); our device plugin runs as a DaemonSet pod, the node's attach plugin delegates to our
`sriov` CNI server, IPAM is the real host-local plugin. Pods run 4 at a time (one per VF), 25 rounds.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import allocatable_devices, list_pod_resources
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import POD
from sriovop.sim.vf_netdevs import kill_netns
from test.support.cluster import POD_TIMEOUT_S, SRIOVOP, ClusterNodes, running_pod
from test.support.crictl import crictl
from test.support.kube import apply_crds
from test.support.poll import wait_for
from test.support.vf_node import DP_TIMEOUT_S, NETWORK_STATUS, VfNode, vf_node

REPO = Path(__file__).resolve().parents[3]
NAD_CRD = REPO / "manifests" / "crds" / "k8s.cni.cncf.io_network-attachment-definitions.yaml"
ROUNDS = 25
KUBELET_RESTART_ROUND = 8
DEAD_NETNS_ROUND = 12
DEVICE_PLUGIN_RESTART_ROUND = 17


@pytest.fixture
def vfs(cluster_nodes: ClusterNodes, kube: Client, node_namespace: str, tmp_path: Path) -> Iterator[VfNode]:
    apply_crds(cluster_nodes.kubeconfig, [NAD_CRD])
    with vf_node(cluster_nodes, kube, node_namespace, tmp_path / "vfnode") as node:
        yield node


def _kill_netns_of(vf: VfNode, pod: str) -> list[str]:
    """End the pod's network namespace as far as the CNI can tell, before the runtime's DEL: the VF goes
    back to the host as the kernel returns it from a dying namespace (sriovop.sim.vf_netdevs.kill_netns), and
    containerd's netns mount is taken away, so containerd sees it closed and DELs with no CNI_NETNS.
    The pause process keeps the (now VF-less) namespace until the pod is deleted."""
    socket = vf.cluster.containerd_socket(vf.node)
    sandbox = crictl(socket, "pods", "-q", "--namespace", vf.namespace, "--name", pod, "--state", "ready").split()[0]
    info = json.loads(crictl(socket, "inspectp", sandbox))["info"]
    path = next(ns["path"] for ns in info["runtimeSpec"]["linux"]["namespaces"] if ns["type"] == "network")
    name = f"churn-dead-{sandbox[:8]}"
    subprocess.run(["ip", "netns", "attach", name, str(info["pid"])], check=True, capture_output=True, timeout=60)
    returned = kill_netns(vf.sim.root, name)
    subprocess.run(["umount", path], check=True, capture_output=True, timeout=60)
    return returned


def _vf_of(vf: VfNode, pod: dict[str, Any]) -> str:
    """The VF the kubelet allocated to the pod (pod-resources), once the pod's net1 is in its status."""
    statuses = json.loads(pod["metadata"]["annotations"][NETWORK_STATUS])
    assert [s["name"] for s in statuses if s.get("interface") == "net1"] == [f"{vf.namespace}/churn"], statuses
    [device] = [d for p in list_pod_resources(vf.pod_resources) if p.name == pod["metadata"]["name"]
                for c in p.containers for r in c.devices if r.resource_name == vf.resource for d in r.device_ids]
    return device


def _kubelet_devices(vf: VfNode) -> int:
    """How many devices of the resource the kubelet itself can allocate now (healthy, from a live
    endpoint); node status lags behind it by a status update."""
    try:
        return sum(len(c.device_ids) for c in allocatable_devices(vf.pod_resources, timeout=5)
                   if c.resource_name == vf.resource)
    except KubeletApiError:
        return 0


def _restart_device_plugin(vf: VfNode) -> None:
    """Delete the device-plugin pod; the DaemonSet makes a new one, which registers again. Pods are
    only created again once the old pod is gone and the kubelet has every device back."""
    [old] = vf.device_plugin_pods()
    vf.kube.delete(POD, old["metadata"]["name"], vf.namespace)
    wait_for(lambda: [p for p in vf.device_plugin_pods() if p["metadata"]["uid"] != old["metadata"]["uid"]
                      and running_pod(vf.kube, vf.namespace, p["metadata"]["name"])]
             and not [p for p in vf.device_plugin_pods() if p["metadata"]["uid"] == old["metadata"]["uid"]],
             timeout=DP_TIMEOUT_S, what="the old device-plugin pod gone and the DaemonSet's new one Running")
    wait_for(lambda: _kubelet_devices(vf) == len(vf.vfs) and vf.allocatable() == str(len(vf.vfs)),
             timeout=DP_TIMEOUT_S, what="every device back in the kubelet after the device-plugin restart")


def _run_pod(vf: VfNode, name: str, rejected: list[str] | None) -> dict[str, Any]:
    """Wait for the pod Running. Right after a kubelet or device-plugin restart (`rejected` given) the
    kubelet may still refuse a pod at admission (UnexpectedAdmissionError: a terminal phase, before any
    sandbox or CNI call); such a pod is created again, as its controller would, and counted."""
    def admitted() -> dict[str, Any] | None:
        pod = vf.kube.get(POD, name, vf.namespace)
        status = pod.get("status") or {}
        if rejected is not None and status.get("phase") == "Failed" and \
                status.get("reason") == "UnexpectedAdmissionError":
            rejected.append(name)
            vf.kube.delete(POD, name, vf.namespace)
            wait_for(lambda: vf.gone({name}), timeout=POD_TIMEOUT_S, what=f"rejected pod {name} gone")
            vf.kube.create(POD, vf.vf_pod(name, "churn"), vf.namespace)
            return None
        return vf.running(name)

    return dict(wait_for(admitted, timeout=POD_TIMEOUT_S * 2, what=f"pod {name} Running"))


def test_100_vf_pods_through_kubelet_and_device_plugin_restarts(vfs: VfNode, kube: Client) -> None:
    started = time.monotonic()
    originals = vfs.host_links()
    before = {name: originals[name]["mac"] for name in vfs.vfs.values()}
    vfs.create_nad("churn", vfs.sriov_config("churn", "10.77.0.0/24", spoofchk="off", vlan=0))
    slots = len(vfs.vfs)
    seen: set[str] = set()
    rejected: list[str] = []
    cycles = 0
    for rnd in range(ROUNDS):
        names = {f"churn-{rnd}-{i}" for i in range(slots)}
        for name in sorted(names):
            kube.create(POD, vfs.vf_pod(name, "churn"), vfs.namespace)
        after_restart = rnd - 1 in (KUBELET_RESTART_ROUND, DEVICE_PLUGIN_RESTART_ROUND)
        pods = [_run_pod(vfs, n, rejected if after_restart else None) for n in sorted(names)]
        held = [_vf_of(vfs, p) for p in pods]
        assert sorted(held) == sorted(vfs.vfs), f"round {rnd}: each pod one distinct VF, got {held}"
        in_host = set(vfs.host_links())
        assert not in_host & set(vfs.vfs.values()), f"round {rnd}: VFs still in the host namespace"
        seen.update(held)
        if rnd == DEAD_NETNS_ROUND:
            # The pod's namespace dies before the runtime's DEL: the VF comes back to the host as the
            # kernel returns it (named net1), and the DEL that follows finds no namespace to open.
            victim = sorted(names)[0]
            assert _kill_netns_of(vfs, victim) == ["net1"]
        for name in names:
            kube.delete(POD, name, vfs.namespace)
        wait_for(lambda names=names: vfs.gone(names), timeout=POD_TIMEOUT_S,  # type: ignore[misc]
                 what=f"round {rnd}'s pods gone")
        cycles += slots
        if rnd == KUBELET_RESTART_ROUND:
            subprocess.run([*SRIOVOP, "dev", "cluster", "restart-kubelet", "--dir", str(vfs.cluster.dir),
                            "--node", vfs.node], check=True, capture_output=True, timeout=300)
            wait_for(lambda: _kubelet_devices(vfs) == slots and vfs.allocatable() == str(slots),
                     timeout=DP_TIMEOUT_S, what="every device back in the kubelet after its restart")
        if rnd == DEVICE_PLUGIN_RESTART_ROUND:
            _restart_device_plugin(vfs)
    assert cycles == 100 and seen == set(vfs.vfs)

    # Every VF back in the host namespace with its original name and MAC; nothing left in state.
    wait_for(lambda: vfs.leftovers() == [], timeout=POD_TIMEOUT_S, what="no CNI cache, allocation or lease left")
    links = vfs.host_links()
    assert {name: links.get(name, {}).get("mac") for name in before} == before
    assert "net1" not in links
    assert vfs.allocatable() == str(slots)
    # The device plugin's device-info files are per device, rewritten at each Allocate and kept after
    # the pod (upstream's contract): at most one per VF, never one per pod.
    infos = sorted(p.name for p in (vfs.work / "devinfo").iterdir())
    assert len(infos) <= slots and all(any(pci in n for pci in vfs.vfs) for n in infos), infos
    print(json.dumps({"cycles": cycles, "admission_rejections_after_restarts": len(rejected),
                      "seconds": round(time.monotonic() - started, 1)}))
