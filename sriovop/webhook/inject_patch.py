"""The JSON patch the injector answers with, op for op in upstream's order and shape.

Upstream's patch, when the pod's networks ask for device resources:
1. `containers[0].resources`: an empty `requests`/`limits` map is added where missing, then one
   `add` per resource under each (path keys escaped, `/` as `~1`), requests equal to limits;
2. with the hugepage feature, `CONTAINER_NAME` in the env of every container that asks for hugepages;
3. the `podnetinfo` mount (read-only, /etc/podnetinfo) in every container that lacks it, an empty
   `volumeMounts` list added first where there is none;
4. the `podnetinfo` downward-API volume unless the pod has one: `labels` and `annotations` items when
   the pod has any, then the hugepage items (divisor 1Mi), an empty `volumes` list added first where
   there is none;
5. the user-defined annotation injections that match the pod's labels;
and, whether or not resources were asked for, `spec.nodeSelector` merged with the networks' selectors.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from sriovop.api.v1 import consts
from sriovop.webhook.admission import Denied
from sriovop.webhook.control_switches import ControlSwitches
from sriovop.webhook.fields import as_list, as_map, loose_str

CONTAINER_NAME_ENV: Final = "CONTAINER_NAME"
_HUGEPAGES = re.compile(r"^hugepages-(.+)$")
_QUANTITY = re.compile(r"^\s*\+?(\d+)\s*(|k|M|G|T|P|E)\s*$")
_DECIMAL_SI = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_ZERO = re.compile(r"^\s*[+-]?0*(\.0*)?[A-Za-z]*\s*$")

Patch = list[dict[str, Any]]


def _key(name: str) -> str:
    """A map key as one JSON-pointer segment (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")


def _add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def whole_count(value: Any, field: str) -> int:
    """An extended resource's quantity as an int ("2", 2, "1k"); the API server allows only whole ones."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _QUANTITY.match(value) if isinstance(value, str) else None
    if match is None:
        raise Denied(field, f"{value!r} is not a whole number of devices, so the networks' count cannot be "
                            "added to it")
    return int(match.group(1)) * _DECIMAL_SI[match.group(2)]


def _requested_anywhere(containers: list[dict[str, Any]], resource: str) -> bool:
    for container in containers:
        resources = as_map(container.get("resources"))
        if resource in as_map(resources.get("requests")) or resource in as_map(resources.get("limits")):
            return True
    return False


def resource_patch(containers: list[dict[str, Any]], wanted: Counter[str], switches: ControlSwitches) -> Patch:
    """Requests = limits = count on containers[0]. By default a resource some container already asks for
    is left alone; with honor-resources the count is added to containers[0]'s own value."""
    first = as_map(containers[0].get("resources"))
    requests, limits = as_map(first.get("requests")), as_map(first.get("limits"))
    amounts: list[tuple[str, int, int]] = []
    for resource in sorted(wanted):
        count = wanted[resource]
        if switches.honor_resources:
            at = f"spec.containers[0].resources.%s[{resource}]"
            req = count + (whole_count(requests[resource], at % "requests") if resource in requests else 0)
            lim = count + (whole_count(limits[resource], at % "limits") if resource in limits else 0)
            amounts.append((resource, req, lim))
        elif not _requested_anywhere(containers, resource):
            amounts.append((resource, count, count))
    if not amounts:
        return []
    patch: Patch = []
    if not isinstance(containers[0].get("resources"), dict):
        patch.append(_add("/spec/containers/0/resources", {}))
    for kind, present in (("requests", requests), ("limits", limits)):
        if not present:
            patch.append(_add(f"/spec/containers/0/resources/{kind}", {}))
    for resource, req, lim in amounts:
        patch.append(_add(f"/spec/containers/0/resources/requests/{_key(resource)}", str(req)))
        patch.append(_add(f"/spec/containers/0/resources/limits/{_key(resource)}", str(lim)))
    return patch


def _is_zero(value: Any) -> bool:
    return value == 0 or (isinstance(value, str) and bool(_ZERO.match(value)))


def hugepage_items(containers: list[dict[str, Any]]) -> tuple[Patch, list[dict[str, Any]]]:
    """(CONTAINER_NAME env ops, downward-API items) for every non-zero `hugepages-<size>` request and
    limit: path `hugepages_<size without "i">_{request,limit}_<container>`, in MiB."""
    patch: Patch = []
    items: list[dict[str, Any]] = []
    for i, container in enumerate(containers):
        name = loose_str(container.get("name"))
        resources = as_map(container.get("resources"))
        found = False
        for kind in ("requests", "limits"):
            for resource, amount in as_map(resources.get(kind)).items():
                match = _HUGEPAGES.match(resource)
                if match is None or _is_zero(amount):
                    continue
                found = True
                items.append({
                    "path": f"hugepages_{match.group(1).replace('i', '')}_{kind[:-1]}_{name}",
                    "resourceFieldRef": {"containerName": name, "resource": f"{kind}.{resource}", "divisor": "1Mi"},
                })
        env = [e for e in as_list(container.get("env")) if isinstance(e, dict)]
        if found and not any(e.get("name") == CONTAINER_NAME_ENV for e in env):
            var = {"name": CONTAINER_NAME_ENV, "value": name}
            patch.append(_add(f"/spec/containers/{i}/env/-", var) if env
                         else _add(f"/spec/containers/{i}/env", [var]))
    return patch, items


def podnetinfo_patch(pod: Mapping[str, Any], containers: list[dict[str, Any]],
                     extra_items: list[dict[str, Any]]) -> Patch:
    patch: Patch = []
    mount = {"name": consts.PODNETINFO_VOLUME, "readOnly": True, "mountPath": consts.PODNETINFO_MOUNT_PATH}
    for i, container in enumerate(containers):
        mounts = [m for m in as_list(container.get("volumeMounts")) if isinstance(m, dict)]
        if any(m.get("name") == consts.PODNETINFO_VOLUME for m in mounts):
            continue
        if not mounts:
            patch.append(_add(f"/spec/containers/{i}/volumeMounts", []))
        patch.append(_add(f"/spec/containers/{i}/volumeMounts/-", mount))
    volumes = [v for v in as_list(as_map(pod.get("spec")).get("volumes")) if isinstance(v, dict)]
    if any(v.get("name") == consts.PODNETINFO_VOLUME for v in volumes):
        return patch
    if not volumes:
        patch.append(_add("/spec/volumes", []))
    meta = as_map(pod.get("metadata"))
    items: list[dict[str, Any]] = []
    if as_map(meta.get("labels")):
        items.append({"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}})
    if as_map(meta.get("annotations")):
        items.append({"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}})
    volume = {"name": consts.PODNETINFO_VOLUME, "downwardAPI": {"items": items + extra_items}}
    patch.append(_add("/spec/volumes/-", volume))
    return patch


def annotations_patch(pod: Mapping[str, Any], injected: Mapping[str, str]) -> Patch:
    """The user-defined annotations, added without overriding any the pod already has (the pod's own
    value is also the one whose networks were counted)."""
    if not injected:
        return []
    current = {k: v for k, v in as_map(as_map(pod.get("metadata")).get("annotations")).items()}
    return [_add("/metadata/annotations", {**injected, **current})]


def node_selector_patch(pod: Mapping[str, Any], wanted: Mapping[str, str]) -> Patch:
    """The pod's nodeSelector with the networks' labels merged in (the networks win on a clash)."""
    if not wanted:
        return []
    current = as_map(as_map(pod.get("spec")).get("nodeSelector"))
    return [_add("/spec/nodeSelector", {**current, **wanted})]
