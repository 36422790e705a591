"""The networks a pod asks Multus for, read the way Multus and upstream's injector read them.

Two annotations name networks: `k8s.v1.cni.cncf.io/networks` (additional networks) and
`v1.multus-cni.io/default-network` (a replacement for the cluster network). Each holds either a JSON
list of `{name, namespace, interface}` objects or a comma-separated list of `[namespace/]name[@interface]`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from sriovop.api.v1 import consts
from sriovop.webhook.admission import Denied

DEFAULT_NETWORK_ANNOTATION: Final = consts.POD_DEFAULT_NETWORK_ANNOTATION
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def annotation_field(annotation: str) -> str:
    """The field path a denial names for `annotation`."""
    return f"metadata.annotations[{annotation}]"


@dataclass(frozen=True, slots=True)
class NetworkRef:
    namespace: str
    name: str
    interface: str = ""


def _checked(ref: NetworkRef, where: str, field: str) -> NetworkRef:
    for what, value in (("namespace", ref.namespace), ("name", ref.name)):
        if len(value) > 253 or not _DNS_NAME.match(value):
            raise Denied(field, f"{where}: {what} {value!r} is not a valid Kubernetes object name")
    return ref


def _parse_json(text: str, default_namespace: str, field: str) -> list[NetworkRef]:
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise Denied(field, f"is not a valid JSON list of networks: {exc}") from None
    if not isinstance(items, list):
        raise Denied(field, "must be a JSON list of network objects")
    refs = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise Denied(field, f"element {i} must be an object with a non-empty string name")
        ns = item.get("namespace")
        iface = item.get("interface")
        if ns is not None and not isinstance(ns, str):
            raise Denied(field, f"element {i}: namespace must be a string")
        if iface is not None and not isinstance(iface, str):
            raise Denied(field, f"element {i}: interface must be a string")
        refs.append(_checked(NetworkRef(ns or default_namespace, item["name"], iface or ""), f"element {i}", field))
    return refs


def parse_networks(value: str, default_namespace: str,
                   annotation: str = consts.POD_NETWORKS_ANNOTATION) -> list[NetworkRef]:
    """The two forms Multus accepts: `a, ns/b@eth1` and a JSON list of {name, namespace, interface}.

    Raises Denied naming `annotation` when the value is neither."""
    field = annotation_field(annotation)
    text = value.strip()
    if text.startswith("["):
        return _parse_json(text, default_namespace, field)
    refs = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        ref, at, iface = item.partition("@")
        ns, slash, name = ref.rpartition("/")
        if "/" in ns or (slash and not ns) or not name or (at and (not iface or "@" in iface)):
            raise Denied(field, f"network {item!r} is not of the form [namespace/]name[@interface]")
        refs.append(_checked(NetworkRef(ns or default_namespace, name, iface), f"network {item!r}", field))
    return refs
