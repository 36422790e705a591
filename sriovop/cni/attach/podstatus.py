"""Writing the network-status annotation on the pod.

Multus writes it through the pods/status subresource (UpdateStatus), which the node's identity may
update while it may not update the pod itself. A conflict (the kubelet updates status at the same time)
means: read the pod again and retry, as client-go's RetryOnConflict does.
"""

from __future__ import annotations

from typing import Any

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_random

from sriovop.cni.attach import status
from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import POD


class PodUIDMismatch(Exception):
    """The pod of that name is not the one being set up (it was deleted and created again)."""


@retry(retry=retry_if_exception_type(Conflict), stop=stop_after_attempt(5), wait=wait_random(0.01, 0.05),
       reraise=True)
def write_network_status(client: Client, namespace: str, name: str, uid: str, value: str) -> dict[str, Any]:
    pod = dict(client.get(POD, name, namespace))
    meta = pod.setdefault("metadata", {})
    if uid and meta.get("uid") != uid:
        raise PodUIDMismatch(f"expected pod {namespace}/{name} UID {uid!r} but the API has {meta.get('uid')!r}")
    annotations = meta.setdefault("annotations", {}) or {}
    annotations[status.ANNOTATION] = value
    meta["annotations"] = annotations
    return dict(client.update_status(POD, pod, field_manager="sriovop-attach"))
