"""The 2-node cluster of `sriovop dev cluster up --nodes 2` does what a cluster does: Ready nodes with
their roles, pods with bridge IPs the host reaches, the `kubernetes` Service with a pod's own token,
Deployments turned into pods.

Host: this machine (kubelets, containerd and pod bridges on the host), not the simulated SR-IOV host
nor the QEMU guest. Everything is real: kubelet, containerd, runc, CNI bridge, kube-controller-manager,
kube-scheduler.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from pathlib import Path

from kubernetes import client as k8s

from sriovop.devcluster.images.pause import PAUSE_IMAGE
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import DEPLOYMENT, NODE, POD, SERVICE
from test.support.cluster import (
    APICHECK_IMAGE,
    POD_TIMEOUT_S,
    ClusterNodes,
    build_apicheck_archive,
    finished_phase,
    pod_on,
    running_pod,
)
from test.support.kube import api_client
from test.support.poll import wait_for


def _connect(ip: str, port: int, timeout: float = 3.0) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            return s.connect_ex((ip, port))
        except TimeoutError:
            return errno.ETIMEDOUT


def test_nodes_ready_with_roles(cluster_nodes: ClusterNodes, kube: Client) -> None:
    assert f"export KUBECONFIG={cluster_nodes.kubeconfig}" in cluster_nodes.up_output.splitlines()
    nodes = {n["metadata"]["name"]: n for n in kube.list(NODE)}
    assert sorted(nodes) == ["sriovop-node-1", "sriovop-node-2"]
    for name, node in nodes.items():
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", (name, ready)
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses["InternalIP"] == cluster_nodes.network.host_ip
        assert not node["spec"].get("taints"), "node 1 stays schedulable (no control-plane taint)"
    labels1, labels2 = nodes["sriovop-node-1"]["metadata"]["labels"], nodes["sriovop-node-2"]["metadata"]["labels"]
    assert labels1.get("node-role.kubernetes.io/control-plane") == ""
    assert "node-role.kubernetes.io/worker" not in labels1
    assert labels2.get("node-role.kubernetes.io/worker") == ""
    assert "node-role.kubernetes.io/control-plane" not in labels2


def test_pod_on_each_node_gets_a_bridge_ip_the_host_reaches(
    cluster_nodes: ClusterNodes, kube: Client, node_namespace: str
) -> None:
    for net in cluster_nodes.network.nodes:
        kube.create(POD, pod_on(net.name, f"pause-{net.name}"), node_namespace)
    for net in cluster_nodes.network.nodes:
        pod = wait_for(lambda n=net: running_pod(kube, node_namespace, f"pause-{n.name}"),  # type: ignore[misc]
                       timeout=POD_TIMEOUT_S, what=f"pause pod on {net.name} Running")
        assert pod["spec"]["nodeName"] == net.name
        ip = ipaddress.ip_address(pod["status"]["podIP"])
        assert ip in net.subnet, f"{ip} outside {net.name}'s subnet {net.subnet}"
        # pause listens on nothing: a refused connection is a RST from the pod's own kernel, which
        # proves the host routes to the pod (an unreachable address times out or has no route)
        code = _connect(str(ip), 9, timeout=10)
        assert code == errno.ECONNREFUSED, f"connect to {ip}:9 gave {errno.errorcode.get(code, code)}"


def test_service_cluster_ip_follows_its_endpoints(
    cluster_nodes: ClusterNodes, kube: Client, node_namespace: str
) -> None:
    """A ClusterIP reaches the Service's pod while it exists and stops when it is gone (the proxy
    follows EndpointSlices that kube-controller-manager writes). The pod (pause) listens on nothing,
    so a refused connection is the pod's own RST: the ClusterIP was translated to the pod's address."""
    node = cluster_nodes.node_names[-1]
    pod = pod_on(node, "backend")
    pod["metadata"]["labels"] = {"app": "backend"}
    kube.create(POD, pod, node_namespace)
    svc = kube.create(SERVICE, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "backend"},
                                "spec": {"selector": {"app": "backend"},
                                         "ports": [{"name": "x", "port": 80, "targetPort": 9}]}}, node_namespace)
    cluster_ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(cluster_ip) in cluster_nodes.network.service_range
    wait_for(lambda: _connect(cluster_ip, 80) == errno.ECONNREFUSED, timeout=POD_TIMEOUT_S,
             what=f"{cluster_ip}:80 translated to the backend pod")
    kube.delete(POD, "backend", node_namespace)
    wait_for(lambda: _connect(cluster_ip, 80) != errno.ECONNREFUSED, timeout=POD_TIMEOUT_S,
             what=f"{cluster_ip}:80 no longer translated once the pod is gone")


def test_pod_reaches_apiserver_through_kubernetes_service_with_its_token(
    cluster_nodes: ClusterNodes, kube: Client, node_namespace: str, tmp_path: Path
) -> None:
    cluster_nodes.import_image(build_apicheck_archive(tmp_path))
    for net in cluster_nodes.network.nodes:
        kube.create(POD, pod_on(net.name, f"apicheck-{net.name}", APICHECK_IMAGE, restartPolicy="Never"),
                    node_namespace)
    for net in cluster_nodes.network.nodes:
        name = f"apicheck-{net.name}"
        phase = wait_for(lambda n=name: finished_phase(kube, node_namespace, n),  # type: ignore[misc]
                         timeout=POD_TIMEOUT_S, what=f"{name} finished")
        with api_client(cluster_nodes.kubeconfig) as api:  # the log comes through kube-apiserver -> kubelet
            logs = k8s.CoreV1Api(api).read_namespaced_pod_log(name, node_namespace)
        assert phase == "Succeeded", logs
        service = f"{cluster_nodes.network.kubernetes_service_ip}:443"
        assert logs.strip() == f"service={service} user=system:serviceaccount:{node_namespace}:default"


def test_deployment_gets_its_pods(cluster_nodes: ClusterNodes, kube: Client, node_namespace: str) -> None:
    labels = {"app": "spread"}
    kube.create(DEPLOYMENT, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "spread"},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": PAUSE_IMAGE, "imagePullPolicy": "IfNotPresent"}]},
        }},
    }, node_namespace)
    wait_for(lambda: (kube.get(DEPLOYMENT, "spread", node_namespace).get("status") or {}).get("availableReplicas") == 3,
             timeout=POD_TIMEOUT_S, what="deployment spread 3/3 available")
    pods = kube.list(POD, node_namespace, label_selector=labels)
    assert len(pods) == 3
    for pod in pods:
        assert pod["status"]["phase"] == "Running"
        owner = pod["metadata"]["ownerReferences"][0]
        assert owner["kind"] == "ReplicaSet" and owner["name"].startswith("spread-")
        assert pod["spec"]["nodeName"] in cluster_nodes.node_names
