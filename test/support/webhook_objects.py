"""Builders for the objects the webhook judges, shared by the webhook's unit, integration and bench code."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

from sriovop.api.v1.supportednics import SupportedNics
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.settings import WebhookSettings

OPERATOR_NS = "sriov-network-operator"
API = "sriovnetwork.openshift.io/v1"
WORKER = {"node-role.kubernetes.io/worker": ""}

#: A slice of upstream's supported-nic-ids ConfigMap.
SUPPORTED_NIC_DATA = {
    "Intel_i40e_XXV710": "8086 158a 154c",
    "Intel_i40e_10G_X710_SFP": "8086 1572 154c",
    "Intel_ixgbe_82576": "8086 10c9 10ca",
    "Intel_ice_E810-XXVDA2": "8086 159b 1889",
    "Nvidia_mlx5_ConnectX-6_Dx": "15b3 101d 101e",
    "Nvidia_mlx5_ConnectX-5": "15b3 1017 1018",
    "Redhat_virtio": "1af4 1000 1000",
}
NICS = SupportedNics.from_configmap_data(SUPPORTED_NIC_DATA)
SETTINGS = WebhookSettings(namespace=OPERATOR_NS)


def node(name: str, labels: dict[str, str] | None = None, provider_id: str = "") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": name, "labels": dict(WORKER if labels is None else labels)}}
    if provider_id:
        obj["spec"] = {"providerID": provider_id}
    return obj


def iface(name: str, pci: str, vendor: str = "8086", device: str = "158b", totalvfs: int = 64, numvfs: int = 0,
          mtu: int = 1500, link_type: str = "ETH", alt_names: list[str] | None = None,
          net_filter: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "pciAddress": pci, "vendor": vendor, "deviceID": device,
                           "totalvfs": totalvfs, "numVfs": numvfs, "mtu": mtu, "linkType": link_type}
    if alt_names:
        out["altNames"] = alt_names
    if net_filter:
        out["netFilter"] = net_filter
    return out


def intel_xxv710(name: str = "ens1f0", pci: str = "0000:3b:00.0", **kw: Any) -> dict[str, Any]:
    return iface(name, pci, "8086", "158a", **kw)


def mellanox_cx6(name: str = "ens2f0", pci: str = "0000:5e:00.0", **kw: Any) -> dict[str, Any]:
    kw.setdefault("totalvfs", 8)
    return iface(name, pci, "15b3", "101d", **kw)


def node_state(name: str, interfaces: list[dict[str, Any]], sync: str = "Succeeded",
               namespace: str = OPERATOR_NS) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "SriovNetworkNodeState",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {}, "status": {"interfaces": interfaces, "syncStatus": sync}}


def policy(name: str = "p1", namespace: str = OPERATOR_NS, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resourceName": "intelnics", "nodeSelector": dict(WORKER), "numVfs": 4,
                            "nicSelector": {"pfNames": ["ens1f0"]}, "priority": 99, "isRdma": False}
    body.update(spec)
    return {"apiVersion": API, "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": body}


def nad(name: str, namespace: str, resource: str | None = "openshift.io/intelnics") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if resource is not None:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": resource}
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition", "metadata": meta,
            "spec": {"config": json.dumps({"cniVersion": "1.0.0", "name": name, "type": "sriov"})}}


def pod(name: str, namespace: str, networks: str | None, containers: int = 1, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if networks is not None:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/networks": networks}
    meta.update(extra.pop("metadata", {}))
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": "busybox"} for i in range(containers)]}
    spec.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def default_cluster(extra_policies: list[dict[str, Any]] | None = None) -> StaticClusterView:
    """Two workers with an Intel XXV710 and a Mellanox CX-6 Dx each, and a non-worker without NICs."""
    nodes = [node("worker-0"), node("worker-1"), node("master-0", {"node-role.kubernetes.io/master": ""})]
    states = [
        node_state(n, [intel_xxv710(alt_names=["enp59s0f0"]), intel_xxv710("ens1f1", "0000:3b:00.1"),
                       mellanox_cx6()])
        for n in ("worker-0", "worker-1")
    ]
    return StaticClusterView(nodes, states, extra_policies or [], [], NICS)


def review(kind: str, obj: dict[str, Any] | None, operation: str = "CREATE",
           old: dict[str, Any] | None = None, group: str = "sriovnetwork.openshift.io",
           namespace: str | None = None) -> dict[str, Any]:
    subject = obj if obj is not None else old or {}
    meta = subject.get("metadata") or {}
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
        "operation": operation,
        "name": meta.get("name", ""),
        "namespace": namespace if namespace is not None else meta.get("namespace", ""),
        "object": copy.deepcopy(obj),
        "oldObject": copy.deepcopy(old),
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def apply_json_patch(doc: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 `add` (the only op the webhook emits), strict about missing parents like the API server."""
    out = copy.deepcopy(doc)
    for op in patch:
        assert op["op"] == "add", op
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target: Any = out
        for part in parts[:-1]:
            target = target[int(part)] if isinstance(target, list) else target[part]
        last = parts[-1]
        if isinstance(target, list):
            target.insert(len(target) if last == "-" else int(last), copy.deepcopy(op["value"]))
        else:
            target[last] = copy.deepcopy(op["value"])
    return out
