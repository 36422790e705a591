"""Bad input on the VF path leaves nothing half-done: a resource asked beyond what the node has keeps
the pod Pending with the scheduler's reason, an ADD that fails after the VF was taken gives it back as
it was, and a pod cannot take a VF the kubelet allocated to another pod.

Host: the simulated SR-IOV host (4 VFs of a simulated E810) under the real kubelet, scheduler,
containerd and runc of the session's 2-node cluster (node sriovop-node-2); our device plugin runs as a
DaemonSet pod and the node's attach plugin delegates to our `sriov` CNI server (test/support/vf_node.py).
The invalid-NAD event is in test_attach_cluster.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import EVENT, NAMESPACE, POD, SERVICE_ACCOUNT
from test.support.cluster import POD_TIMEOUT_S, ClusterNodes
from test.support.controllers_harness import client_for
from test.support.kube import apply_crds
from test.support.poll import wait_for
from test.support.vf_node import VfNode, vf_node

REPO = Path(__file__).resolve().parents[3]
NAD_CRD = REPO / "manifests" / "crds" / "k8s.cni.cncf.io_network-attachment-definitions.yaml"


@pytest.fixture(scope="module")
def vfs(cluster_nodes: ClusterNodes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VfNode]:
    kube = client_for(cluster_nodes.kubeconfig)
    apply_crds(cluster_nodes.kubeconfig, [NAD_CRD])
    namespace = f"vfbad-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACE, {"metadata": {"name": namespace}})
    wait_for(lambda: kube.get(SERVICE_ACCOUNT, "default", namespace), timeout=120, what="serviceaccount default")
    try:
        with vf_node(cluster_nodes, kube, namespace, tmp_path_factory.mktemp("vfbad"), node="sriovop-node-2") as node:
            yield node
    finally:
        try:
            kube.delete(NAMESPACE, namespace)
        except NotFound:
            pass


def _events(vf: VfNode, name: str, reason: str) -> list[str]:
    return [str(e.get("message")) for e in vf.kube.list(EVENT, vf.namespace)
            if e["involvedObject"].get("name") == name and e.get("reason") == reason]


def _unschedulable(kube: Client, namespace: str, name: str) -> dict[str, Any] | None:
    pod = kube.get(POD, name, namespace)
    conditions = (pod.get("status") or {}).get("conditions") or []
    scheduled = [(c.get("status"), c.get("reason")) for c in conditions if c.get("type") == "PodScheduled"]
    return dict(pod) if scheduled == [("False", "Unschedulable")] else None


def _delete(vf: VfNode, name: str) -> None:
    vf.kube.delete(POD, name, vf.namespace)
    wait_for(lambda: vf.gone({name}), timeout=POD_TIMEOUT_S, what=f"pod {name} gone")


def test_more_vfs_than_the_node_has_leaves_the_pod_pending_with_the_schedulers_reason(vfs: VfNode) -> None:
    vfs.create_nad("exhaust", vfs.sriov_config("exhaust", "10.78.0.0/24"))
    kube: Client = vfs.kube
    kube.create(POD, vfs.vf_pod("greedy", "exhaust", vfs=len(vfs.vfs) + 1), vfs.namespace)
    wait_for(lambda: [m for m in _events(vfs, "greedy", "FailedScheduling") if f"Insufficient {vfs.resource}" in m],
             timeout=POD_TIMEOUT_S, what=f"the scheduler's FailedScheduling event naming {vfs.resource}")
    # The scheduler writes the pod's condition apart from the event, and may do so after it.
    pod = wait_for(lambda: _unschedulable(kube, vfs.namespace, "greedy"), timeout=POD_TIMEOUT_S,
                   what="PodScheduled False (Unschedulable) on the pod")
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
    assert vfs.allocatable() == str(len(vfs.vfs)), "nothing was taken for the unscheduled pod"
    _delete(vfs, "greedy")


def test_a_vf_whose_add_failed_is_back_as_it_was(vfs: VfNode) -> None:
    """The VF is taken and configured (MAC, VLAN, spoofchk), then the IPAM plugin is not there: the ADD
    fails, the runtime keeps retrying, and between attempts the VF is in the host namespace with its
    own name and MAC and no state is kept for it."""
    before = vfs.host_links()
    conf: dict[str, Any] = vfs.sriov_config("noipam", "10.79.0.0/24", vlan=42, spoofchk="off",
                                            mac="02:00:00:aa:00:01")
    conf["ipam"] = {"type": "no-such-ipam"}
    vfs.create_nad("noipam", conf)
    vfs.kube.create(POD, vfs.vf_pod("unlucky", "noipam"), vfs.namespace)
    [message] = wait_for(lambda: _events(vfs, "unlucky", "FailedCreatePodSandBox")[-1:], timeout=POD_TIMEOUT_S,
                         what="the sandbox failure event")
    assert "no-such-ipam" in message, message
    pod = vfs.kube.get(POD, "unlucky", vfs.namespace)
    assert pod["status"]["phase"] == "Pending"
    _delete(vfs, "unlucky")
    wait_for(lambda: vfs.leftovers() == [], timeout=POD_TIMEOUT_S, what="no CNI cache or allocation left")
    after = vfs.host_links()
    assert {n: after.get(n, {}).get("mac") for n in vfs.vfs.values()} == \
        {n: before[n]["mac"] for n in vfs.vfs.values()}
    assert vfs.allocatable() == str(len(vfs.vfs))
    print(json.dumps({"sandbox_failure": message[-200:]}))


def test_a_pod_cannot_take_a_vf_the_kubelet_gave_another_pod(vfs: VfNode) -> None:
    """A NAD that pins `deviceID` to the VF a running pod holds: the second pod's ADD is refused by the
    kubelet allocation check, naming the holder, and the holder keeps its VF."""
    vfs.create_nad("free", vfs.sriov_config("free", "10.80.0.0/24"))
    vfs.kube.create(POD, vfs.vf_pod("holder", "free"), vfs.namespace)
    wait_for(lambda: vfs.running("holder"), timeout=POD_TIMEOUT_S, what="pod holder Running")
    [held] = [d for p in vfs.pod_resource_list() if p.name == "holder" for c in p.containers
              for r in c.devices if r.resource_name == vfs.resource for d in r.device_ids]
    vfs.create_nad("pinned", vfs.sriov_config("pinned", "10.81.0.0/24", deviceID=held), with_resource=False)
    vfs.kube.create(POD, vfs.vf_pod("thief", "pinned", vfs=0), vfs.namespace)
    [message] = wait_for(lambda: _events(vfs, "thief", "FailedCreatePodSandBox")[-1:], timeout=POD_TIMEOUT_S,
                         what="the thief's sandbox failure event")
    assert f"deviceID: {held} is allocated by the kubelet to {vfs.namespace}/holder" in message, message
    assert vfs.running("holder")
    assert vfs.vfs[held] not in vfs.host_links(), "the holder's VF must stay in the holder's pod"
    _delete(vfs, "thief")
    _delete(vfs, "holder")
    wait_for(lambda: vfs.leftovers() == [], timeout=POD_TIMEOUT_S, what="no CNI cache or allocation left")
    assert vfs.vfs[held] in vfs.host_links()
