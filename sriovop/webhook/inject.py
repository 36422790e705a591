"""Pod resource injection (upstream's network-resources-injector), on pod CREATE.

A pod that names networks in `k8s.v1.cni.cncf.io/networks` or `v1.multus-cni.io/default-network` (on
the pod, or through a user-defined injection of the `nri-control-switches` ConfigMap) gets:
- for each attachment, +1 of every resource its NetworkAttachmentDefinition names under one of the
  resource-name keys (default `k8s.v1.cni.cncf.io/resourceName`), so a network listed twice asks for
  two devices; the total goes on the first container (`inject_patch.resource_patch`);
- the NADs' `k8s.v1.cni.cncf.io/nodeSelector` labels (`k=v` or `k`, comma-separated) merged into
  `spec.nodeSelector`;
- when its networks ask for resources: the `podnetinfo` downward-API volume at /etc/podnetinfo, the
  hugepage items and `CONTAINER_NAME` where that switch is on, and the user-defined annotations.
A network whose NAD does not exist denies the pod with a message naming it (upstream does the same),
as does an annotation that is not a network list (upstream fails the request, which the API server
turns into a denial or, with failurePolicy Ignore, into an unmutated pod; a denial says why).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sriovop.api.v1 import consts
from sriovop.webhook.admission import AdmissionRequest, Denied, Verdict
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.control_switches import ControlSwitches
from sriovop.webhook.fields import as_list, as_map, loose_str
from sriovop.webhook.inject_patch import (
    Patch,
    annotations_patch,
    hugepage_items,
    node_selector_patch,
    podnetinfo_patch,
    resource_patch,
)
from sriovop.webhook.pod_networks import DEFAULT_NETWORK_ANNOTATION, NetworkRef, annotation_field, parse_networks

NAD_NODE_SELECTOR_ANNOTATION: Final = "k8s.v1.cni.cncf.io/nodeSelector"
#: `<domain>/<name>` as the API server accepts extended resources (domain not kubernetes.io).
_EXTENDED_RESOURCE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


@dataclass
class NetworkNeeds:
    """What the pod's networks ask of it: device resources (count per resource) and node labels."""

    resources: Counter[str] = field(default_factory=Counter)
    node_selector: dict[str, str] = field(default_factory=dict)


def user_injections_for(pod: Mapping[str, Any], switches: ControlSwitches) -> dict[str, str]:
    """Annotations of the user-defined injections whose label the pod carries as "true" (any case); on
    a key two injections set, the one under the first label in sorted order wins."""
    labels = as_map(as_map(pod.get("metadata")).get("labels"))
    out: dict[str, str] = {}
    for label in sorted(switches.user_injections):
        if loose_str(labels.get(label)).lower() == "true":
            for key, value in switches.user_injections[label].items():
                out.setdefault(key, value)
    return out


def _selector_labels(value: str, where: str, field_path: str) -> dict[str, str]:
    labels = {}
    for item in value.split(","):
        if not item.strip():
            continue
        parts = item.split("=")
        if len(parts) > 2:
            raise Denied(field_path,
                         f"{where} has annotation {NAD_NODE_SELECTOR_ANNOTATION}={value!r}: {item.strip()!r} is "
                         "neither key=value nor key")
        labels[parts[0].strip()] = parts[1].strip() if len(parts) == 2 else ""
    return labels


def _add_network(ref: NetworkRef, view: ClusterView, keys: tuple[str, ...], needs: NetworkNeeds,
                 field_path: str) -> None:
    where = f"network-attachment-definition {ref.namespace}/{ref.name}"
    nad = view.network_attachment_definition(ref.namespace, ref.name)
    if nad is None:
        raise Denied(field_path, f"{where} not found; create it (or the SR-IOV network that renders it) "
                                 "before the pod")
    annotations = as_map(as_map(nad.get("metadata")).get("annotations"))
    for key in keys:
        if key not in annotations:
            continue
        resource = loose_str(annotations[key]).strip()
        if not _EXTENDED_RESOURCE.match(resource) or len(resource) > 253:
            # Injecting it would only make the API server reject the pod with a message about resources.
            raise Denied(field_path, f"{where} has annotation {key}={resource!r}, which is not an extended "
                                     "resource name like openshift.io/intelnics")
        needs.resources[resource] += 1
    selector = annotations.get(NAD_NODE_SELECTOR_ANNOTATION)
    if isinstance(selector, str):
        needs.node_selector.update(_selector_labels(selector, where, field_path))


def _network_value(annotation: str, pod_annotations: Mapping[str, Any], injected: Mapping[str, str]) -> Any:
    """The pod's own annotation first, else a user-defined injection's (upstream's precedence)."""
    if annotation in pod_annotations:
        return pod_annotations[annotation]
    return injected.get(annotation)


def network_needs(pod: Mapping[str, Any], namespace: str, view: ClusterView, switches: ControlSwitches,
                  injected: Mapping[str, str]) -> NetworkNeeds | None:
    """None when the pod names no network; raises Denied on a bad annotation or a missing NAD."""
    annotations = as_map(as_map(pod.get("metadata")).get("annotations"))
    default = _network_value(DEFAULT_NETWORK_ANNOTATION, annotations, injected)
    extra = _network_value(consts.POD_NETWORKS_ANNOTATION, annotations, injected)
    if default is None and extra is None:
        return None
    needs = NetworkNeeds()
    for annotation, value in ((DEFAULT_NETWORK_ANNOTATION, default), (consts.POD_NETWORKS_ANNOTATION, extra)):
        if value is None:
            continue
        path = annotation_field(annotation)
        if not isinstance(value, str):
            raise Denied(path, "must be a string")
        refs = parse_networks(value, namespace, annotation)
        if annotation == DEFAULT_NETWORK_ANNOTATION and len(refs) != 1:
            continue  # upstream uses the default network only when exactly one is named
        for ref in refs:
            _add_network(ref, view, switches.resource_name_keys, needs, path)
    return needs


def injection_patch(pod: Mapping[str, Any], needs: NetworkNeeds, switches: ControlSwitches,
                    injected: Mapping[str, str]) -> Patch:
    spec = as_map(pod.get("spec"))
    containers = [c for c in as_list(spec.get("containers")) if isinstance(c, dict)]
    patch: Patch = []
    if needs.resources and containers and len(containers) == len(as_list(spec.get("containers"))):
        patch += resource_patch(containers, needs.resources, switches)
        items: list[dict[str, Any]] = []
        if switches.hugepage_down_api:
            env_ops, items = hugepage_items(containers)
            patch += env_ops
        patch += podnetinfo_patch(pod, containers, items)
        patch += annotations_patch(pod, injected)
    return patch + node_selector_patch(pod, needs.node_selector)


def mutate_pod(request: AdmissionRequest, view: ClusterView, switches: ControlSwitches) -> Verdict:
    pod = request.obj
    if request.operation != "CREATE" or not isinstance(pod, dict):
        return Verdict.allow()
    namespace = request.namespace or loose_str(as_map(pod.get("metadata")).get("namespace")) or "default"
    injected = user_injections_for(pod, switches)
    try:
        needs = network_needs(pod, namespace, view, switches, injected)
    except Denied as denied:
        return Verdict.deny(request, denied)
    if needs is None:
        return Verdict.allow()
    try:
        patch = injection_patch(pod, needs, switches, injected)
    except Denied as denied:
        return Verdict.deny(request, denied)
    return Verdict.allow(patch=patch or None)
