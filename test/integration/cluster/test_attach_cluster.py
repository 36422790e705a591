"""The attach plugin (the Multus subset) on the 2-node dev cluster: every pod sandbox goes through
`sriovop-attach` (the static shim, the node's cni-server, the node's bridge conflist as eth0), and a pod
that names NetworkAttachmentDefinitions gets them as extra interfaces.

Host: this machine. Real kubelet, containerd, runc, the reference CNI plugins (bridge, macvlan,
host-local) and the shim built from images/cni-shim; nothing is faked. The macvlan attachments use the
node's own pod bridge as master, so they leave nothing on the host once the pods are gone.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import EVENT, POD
from test.support.cluster import POD_TIMEOUT_S, ClusterNodes, pod_on, running_pod
from test.support.crictl import crictl
from test.support.kube import apply_crds
from test.support.poll import wait_for

REPO = Path(__file__).resolve().parents[3]
NAD_CRD = REPO / "manifests" / "crds" / "k8s.cni.cncf.io_network-attachment-definitions.yaml"
NODE = "sriovop-node-1"
RANGE = ipaddress.ip_network("198.51.100.0/24")
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"


@pytest.fixture(scope="module")
def nad_crd(cluster_nodes: ClusterNodes) -> None:
    apply_crds(cluster_nodes.kubeconfig, [NAD_CRD])


def _macvlan(cluster_nodes: ClusterNodes, name: str, **extra: Any) -> dict[str, Any]:
    bridge = next(n.bridge for n in cluster_nodes.network.nodes if n.name == NODE)
    return {"cniVersion": "1.0.0", "name": name, "type": "macvlan", "master": bridge, "mode": "bridge",
            "ipam": {"type": "host-local", "ranges": [[{"subnet": str(RANGE)}]],
                     "dataDir": str(cluster_nodes.dir / "attach-test-ipam")}, **extra}


def _create_nad(kube: Client, namespace: str, name: str, config: dict[str, Any] | str,
                annotations: dict[str, str] | None = None) -> None:
    text = config if isinstance(config, str) else json.dumps(config)
    kube.create(NETWORK_ATTACHMENT_DEFINITION, {
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": {"config": text}}, namespace)


def _pod(name: str, networks: str) -> dict[str, Any]:
    pod = pod_on(NODE, name)
    pod["metadata"]["annotations"] = {"k8s.v1.cni.cncf.io/networks": networks}
    return pod


def _pod_addresses(cluster_nodes: ClusterNodes, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    """The pod's interfaces as `ip -j addr` sees them inside its network namespace (found by crictl)."""
    socket = cluster_nodes.containerd_socket(NODE)
    sandbox = crictl(socket, "pods", "-q", "--namespace", namespace, "--name", name, "--state", "ready").split()[0]
    info = json.loads(crictl(socket, "inspectp", sandbox))
    netns = next(ns["path"] for ns in info["info"]["runtimeSpec"]["linux"]["namespaces"] if ns["type"] == "network")
    links = json.loads(subprocess.run(["nsenter", f"--net={netns}", "ip", "-j", "addr"], capture_output=True,
                                      text=True, check=True, timeout=30).stdout)
    return {link["ifname"]: link for link in links}


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list(json.loads(pod["metadata"]["annotations"][NETWORK_STATUS]))


def _cached_for(cluster_nodes: ClusterNodes, namespace: str, name: str) -> list[str]:
    """Container IDs the node's attach cache still holds for the pod (the entries keep CNI_ARGS)."""
    cache = cluster_nodes.dir / "nodes" / NODE / "cni" / "attach-cache"
    wanted = {f"K8S_POD_NAMESPACE={namespace}", f"K8S_POD_NAME={name}"}
    held = []
    for entry in cache.iterdir() if cache.is_dir() else []:
        try:
            args = set(json.loads(entry.read_text())["cniArgs"].split(";"))
        except (FileNotFoundError, ValueError):
            continue  # removed or replaced while we looked
        if wanted <= args:
            held.append(entry.name)
    return held


@pytest.mark.usefixtures("nad_crd")
def test_pod_gets_the_nad_as_net1_and_network_status_lists_both_networks(
        cluster_nodes: ClusterNodes, kube: Client, node_namespace: str) -> None:
    _create_nad(kube, node_namespace, "macnet", _macvlan(cluster_nodes, "macnet"))
    kube.create(POD, _pod("with-net1", "macnet"), node_namespace)
    pod = wait_for(lambda: running_pod(kube, node_namespace, "with-net1"), timeout=POD_TIMEOUT_S,
                   what="pod with-net1 Running")

    default, extra = _statuses(pod)
    assert default["default"] is True and default["interface"] == "eth0"
    assert default["ips"] == [pod["status"]["podIP"]]
    assert extra["name"] == f"{node_namespace}/macnet" and extra["interface"] == "net1"
    assert "default" not in extra
    [ip] = extra["ips"]
    assert ipaddress.ip_address(ip) in RANGE

    links = _pod_addresses(cluster_nodes, node_namespace, "with-net1")
    assert {a["local"] for a in links["net1"]["addr_info"] if a["family"] == "inet"} == {ip}
    assert links["net1"]["address"] == extra["mac"]
    assert {a["local"] for a in links["eth0"]["addr_info"] if a["family"] == "inet"} == {pod["status"]["podIP"]}
    uid = pod["metadata"]["uid"]
    assert _cached_for(cluster_nodes, node_namespace, "with-net1"), "ADD cached nothing for DEL"

    kube.delete(POD, "with-net1", node_namespace)
    wait_for(lambda: not [p for p in kube.list(POD, node_namespace) if p["metadata"]["uid"] == uid],
             timeout=POD_TIMEOUT_S, what="pod with-net1 gone")
    ipam = cluster_nodes.dir / "attach-test-ipam" / "macnet"
    wait_for(lambda: not _cached_for(cluster_nodes, node_namespace, "with-net1"), timeout=POD_TIMEOUT_S,
             what="the attach cache entry removed by DEL")
    assert not [p for p in ipam.iterdir() if p.name == ip], "host-local still holds the pod's address"


@pytest.mark.usefixtures("nad_crd")
def test_json_form_with_interface_and_mac(
        cluster_nodes: ClusterNodes, kube: Client, node_namespace: str) -> None:
    _create_nad(kube, node_namespace, "macmac", _macvlan(cluster_nodes, "macmac", capabilities={"mac": True}))
    mac = "02:5e:00:aa:bb:cc"
    networks = json.dumps([{"name": "macmac", "interface": "data0", "mac": mac},
                           {"name": "macmac", "namespace": node_namespace}])
    kube.create(POD, _pod("json-form", networks), node_namespace)
    pod = wait_for(lambda: running_pod(kube, node_namespace, "json-form"), timeout=POD_TIMEOUT_S,
                   what="pod json-form Running")
    names = [(s["name"], s.get("interface"), s.get("mac")) for s in _statuses(pod)]
    key = f"{node_namespace}/macmac"
    assert names[1:] == [(key, "data0", mac), (key, "net2", names[2][2])]
    links = _pod_addresses(cluster_nodes, node_namespace, "json-form")
    assert links["data0"]["address"] == mac
    assert "net2" in links and "net1" not in links
    kube.delete(POD, "json-form", node_namespace)


@pytest.mark.usefixtures("nad_crd")
def test_invalid_nad_config_keeps_the_pod_creating_with_an_event_naming_the_field(
        cluster_nodes: ClusterNodes, kube: Client, node_namespace: str) -> None:
    broken = {"cniVersion": "1.0.0", "name": "broken", "plugins": [{"master": "x", "mode": "bridge"}]}
    _create_nad(kube, node_namespace, "broken", broken)
    name = f"bad-{uuid.uuid4().hex[:5]}"
    kube.create(POD, _pod(name, "broken"), node_namespace)

    def sandbox_event() -> str | None:
        for event in kube.list(EVENT, node_namespace):
            if event["involvedObject"].get("name") == name and event.get("reason") == "FailedCreatePodSandBox":
                return str(event.get("message"))
        return None

    message = wait_for(sandbox_event, timeout=POD_TIMEOUT_S, what=f"FailedCreatePodSandBox event of {name}")
    assert f"network {node_namespace}/broken: spec.config.plugins[0].type" in message, message
    pod = kube.get(POD, name, node_namespace)
    waiting = [s["state"].get("waiting", {}).get("reason") for s in pod["status"].get("containerStatuses", [])]
    assert pod["status"]["phase"] == "Pending" and waiting == ["ContainerCreating"], pod["status"]
    kube.delete(POD, name, node_namespace)
    wait_for(lambda: not [p for p in kube.list(POD, node_namespace) if p["metadata"]["name"] == name],
             timeout=POD_TIMEOUT_S, what=f"pod {name} gone")
    assert _cached_for(cluster_nodes, node_namespace, name) == []


@pytest.mark.usefixtures("nad_crd")
def test_resource_nad_asks_the_real_kubelet_and_goes_on_without_a_device(
        cluster_nodes: ClusterNodes, kube: Client, node_namespace: str) -> None:
    """A NAD naming a device-plugin resource the pod was not given: the plugin asks the node's kubelet
    (pod-resources `List` on its real socket), finds no device and, as Multus does, injects none."""
    _create_nad(kube, node_namespace, "withres", _macvlan(cluster_nodes, "withres"),
                {"k8s.v1.cni.cncf.io/resourceName": "example.com/absent"})
    kube.create(POD, _pod("with-resource", "withres"), node_namespace)
    pod = wait_for(lambda: running_pod(kube, node_namespace, "with-resource"), timeout=POD_TIMEOUT_S,
                   what="pod with-resource Running")
    extra = _statuses(pod)[1]
    assert extra["interface"] == "net1" and "device-info" not in extra
    assert (cluster_nodes.dir / "nodes" / NODE / "kubelet" / "pod-resources" / "kubelet.sock").is_socket()
    log = (cluster_nodes.dir / "nodes" / NODE / "sriovop-attach.log").read_text()
    assert "pod-resources List failed" not in log and "no device allocation source" not in log
    kube.delete(POD, "with-resource", node_namespace)
