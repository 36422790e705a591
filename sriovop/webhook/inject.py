"""Pod resource injection (upstream's network-resources-injector).

A pod that names networks in `k8s.v1.cni.cncf.io/networks` gets, on its first container, requests and
limits for each network's device-plugin resource (one per attachment, so a network named twice asks
for two VFs), and a `podnetinfo` downward-API volume so the app can read its network annotations.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sriovop.api.v1 import consts
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.fields import as_list, as_map, loose_str

ANNOTATION_FIELD = f"metadata.annotations[{consts.POD_NETWORKS_ANNOTATION}]"
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
#: `<domain>/<name>` as the API server accepts extended resources (domain not kubernetes.io).
_EXTENDED_RESOURCE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_HUGEPAGES = (("1G", "hugepages-1Gi"), ("2M", "hugepages-2Mi"))


@dataclass(frozen=True, slots=True)
class NetworkRef:
    namespace: str
    name: str
    interface: str = ""


def parse_networks(value: str, default_namespace: str) -> list[NetworkRef]:
    """The two forms Multus accepts: `a, ns/b@eth1` and a JSON list of {name, namespace, interface}."""
    text = value.strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise Denied(ANNOTATION_FIELD, f"is not a valid JSON list of networks: {exc}") from None
        if not isinstance(items, list):
            raise Denied(ANNOTATION_FIELD, "must be a JSON list of network objects")
        refs = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                raise Denied(ANNOTATION_FIELD, f"element {i} must be an object with a non-empty string name")
            ns = item.get("namespace")
            iface = item.get("interface")
            if ns is not None and not isinstance(ns, str):
                raise Denied(ANNOTATION_FIELD, f"element {i}: namespace must be a string")
            if iface is not None and not isinstance(iface, str):
                raise Denied(ANNOTATION_FIELD, f"element {i}: interface must be a string")
            refs.append(_checked(NetworkRef(ns or default_namespace, item["name"], iface or ""), f"element {i}"))
        return refs
    refs = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        ref, at, iface = item.partition("@")
        ns, slash, name = ref.rpartition("/")
        if "/" in ns or (slash and not ns) or not name or (at and not iface):
            raise Denied(ANNOTATION_FIELD, f"network {item!r} is not of the form [namespace/]name[@interface]")
        refs.append(_checked(NetworkRef(ns or default_namespace, name, iface), f"network {item!r}"))
    return refs


def _checked(ref: NetworkRef, where: str) -> NetworkRef:
    for what, value in (("namespace", ref.namespace), ("name", ref.name)):
        if len(value) > 253 or not _DNS_NAME.match(value):
            raise Denied(ANNOTATION_FIELD, f"{where}: {what} {value!r} is not a valid Kubernetes object name")
    return ref


def _resources_for(refs: list[NetworkRef], view: ClusterView) -> Counter[str]:
    wanted: Counter[str] = Counter()
    for ref in refs:
        nad = view.network_attachment_definition(ref.namespace, ref.name)
        if nad is None:
            raise Denied(
                ANNOTATION_FIELD,
                f"network-attachment-definition {ref.namespace}/{ref.name} not found; create it (or the SR-IOV "
                "network that renders it) before the pod",
            )
        annotations = as_map(as_map(nad.get("metadata")).get("annotations"))
        resource = loose_str(annotations.get(consts.NAD_RESOURCE_NAME_ANNOTATION)).strip()
        if not resource:
            continue
        if not _EXTENDED_RESOURCE.match(resource) or len(resource) > 253:
            # Injecting it would only make the API server reject the pod with a message about resources.
            raise Denied(
                ANNOTATION_FIELD,
                f"network-attachment-definition {ref.namespace}/{ref.name} has annotation "
                f"{consts.NAD_RESOURCE_NAME_ANNOTATION}={resource!r}, which is not an extended resource "
                "name like openshift.io/intelnics",
            )
        wanted[resource] += 1
    return wanted


def _downward_volume(pod: dict[str, Any], containers: list[dict[str, Any]]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    if (pod.get("metadata") or {}).get("labels"):
        items.append({"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}})
    items.append({"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}})
    for container in containers:
        cname = loose_str(container.get("name"))
        resources = as_map(container.get("resources"))
        for kind in ("requests", "limits"):
            amounts = as_map(resources.get(kind))
            for size, resource in _HUGEPAGES:
                if resource in amounts:
                    items.append({
                        "path": f"hugepages_{size}_{kind[:-1]}_{cname}",
                        "resourceFieldRef": {"containerName": cname, "resource": f"{kind}.{resource}",
                                             "divisor": "1Mi"},
                    })
    return {"name": consts.PODNETINFO_VOLUME, "downwardAPI": {"items": items}}


def injection_patch(pod: dict[str, Any], wanted: Counter[str]) -> list[dict[str, Any]]:
    spec = as_map(pod.get("spec"))
    containers = [c for c in as_list(spec.get("containers")) if isinstance(c, dict)]
    if not wanted or not containers or len(containers) != len(as_list(spec.get("containers"))):
        return []
    patch: list[dict[str, Any]] = []
    first = containers[0]
    resources = copy.deepcopy(as_map(first.get("resources")))
    for kind in ("requests", "limits"):
        amounts = as_map(resources.get(kind))
        for resource, count in sorted(wanted.items()):
            amounts[resource] = str(count)
        resources[kind] = amounts
    patch.append({"op": "add", "path": "/spec/containers/0/resources", "value": resources})
    volumes = spec.get("volumes")
    if isinstance(volumes, list) and any(
        isinstance(v, dict) and v.get("name") == consts.PODNETINFO_VOLUME for v in volumes
    ):
        return patch
    volume = _downward_volume(pod, containers)
    if isinstance(volumes, list) and volumes:
        patch.append({"op": "add", "path": "/spec/volumes/-", "value": volume})
    else:
        patch.append({"op": "add", "path": "/spec/volumes", "value": [volume]})
    mount = {"name": consts.PODNETINFO_VOLUME, "mountPath": consts.PODNETINFO_MOUNT_PATH, "readOnly": True}
    for i, container in enumerate(containers):
        mounts = container.get("volumeMounts")
        if isinstance(mounts, list) and mounts:
            if any(isinstance(m, dict) and m.get("name") == consts.PODNETINFO_VOLUME for m in mounts):
                continue
            patch.append({"op": "add", "path": f"/spec/containers/{i}/volumeMounts/-", "value": mount})
        else:
            patch.append({"op": "add", "path": f"/spec/containers/{i}/volumeMounts", "value": [mount]})
    return patch


def mutate_pod(request: AdmissionRequest, view: ClusterView) -> Verdict:
    pod = request.obj
    if request.operation != "CREATE" or not isinstance(pod, dict):
        return Verdict.allow()
    meta = as_map(pod.get("metadata"))
    annotations = as_map(meta.get("annotations"))
    value = annotations.get(consts.POD_NETWORKS_ANNOTATION)
    if value is None:
        return Verdict.allow()
    try:
        if not isinstance(value, str):
            raise Denied(ANNOTATION_FIELD, "must be a string")
        namespace = request.namespace or loose_str(meta.get("namespace")) or "default"
        wanted = _resources_for(parse_networks(value, namespace), view)
    except Denied as denied:
        return Verdict.deny(request, denied)
    return Verdict.allow(patch=injection_patch(pod, wanted) or None)
