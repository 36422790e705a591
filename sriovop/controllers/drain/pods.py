"""Which pods a drain removes (kubectl drain's filters with the operator's settings).

Upstream runs kubectl's drain.Helper with Force, IgnoreAllDaemonSets and DeleteEmptyDirData, so the
only pods kept are mirror pods and DaemonSet pods; a partial drain (reconfiguration without reboot)
additionally keeps every pod that requests no `RESOURCE_PREFIX` resource, because only pods holding
VFs are disturbed by a change of numVfs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def is_daemonset_pod(pod: Mapping[str, Any]) -> bool:
    return any(ref.get("kind") == "DaemonSet" and ref.get("controller")
               for ref in pod["metadata"].get("ownerReferences") or [])


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    return MIRROR_POD_ANNOTATION in (pod["metadata"].get("annotations") or {})


def requests_resource_prefix(pod: Mapping[str, Any], resource_prefix: str) -> bool:
    """Upstream's partial-drain filter: some container *request* name starts with the prefix."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        if any(str(name).startswith(resource_prefix) for name in requests):
            return True
    return False


def pods_to_evict(pods: Iterable[Mapping[str, Any]], *, full: bool, resource_prefix: str) -> list[Any]:
    """The pods a drain must remove, in a stable order (namespace/name)."""
    out = []
    for pod in pods:
        if is_mirror_pod(pod) or is_daemonset_pod(pod):
            continue
        if not full and not requests_resource_prefix(pod, resource_prefix):
            continue
        out.append(pod)
    return sorted(out, key=pod_key)
