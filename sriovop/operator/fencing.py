"""Write fencing: a replica whose lease may have expired must not write.

Every client the managers write through is a `FencedClient`: before each mutating request it asks the
election whether this replica may still write (lease renewed within the RenewDeadline on the monotonic
clock) and raises NotLeaderError otherwise. A paused-then-resumed old leader therefore fails its
writes (the reconcile is retried, and the elector ends the process) instead of racing its successor.
Reads are never fenced: caches may warm on followers.

Each write attempt is also logged as one structured line (`event="write"`, verb, resource, namespace,
name, HTTP status, the resourceVersion the server answered, the identity, and the wall-clock time the
request was sent). The resourceVersion is the etcd revision at which the write was committed, so a log
reader (hack/failover.py) can order the writes of several replicas the way the server did and prove
that no two leaders' terms interleaved. Refused writes are logged with `status="fenced"`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import structlog
import urllib3

from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.errors import ApiError
from sriovop.runtime.leaderelection import NotLeaderError

log = structlog.get_logger(__name__)

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def describe_path(path: str) -> dict[str, str]:
    """`/apis/g/v/namespaces/ns/plural/name/status` → resource, namespace, name, subresource."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    out = {"resource": "", "namespace": "", "name": "", "subresource": ""}
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        out["namespace"] = rest[1]
        rest = rest[2:]
    for key, value in zip(("resource", "name", "subresource"), rest, strict=False):
        out[key] = value
    return out


def _resource_version(data: bytes) -> str:
    try:
        body = json.loads(data) if data else None
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    return str((body.get("metadata") or {}).get("resourceVersion") or "")


class FencedClient(Client):
    def __init__(self, config: RestConfig, may_write: Callable[[], bool], who: str, identity: str = "") -> None:
        super().__init__(config)
        self._may_write = may_write
        self._who = who
        self._identity = identity

    def request(self, method: str, path: str, **kw: Any) -> urllib3.BaseHTTPResponse:
        if method not in _WRITES:
            return super().request(method, path, **kw)
        sent = time.time()
        if not self._may_write():
            self._log_write(method, path, sent, "fenced", "")
            raise NotLeaderError(f"{self._who}: refusing {method} {path}: this replica does not hold a "
                                 "fresh leader lease")
        try:
            resp = super().request(method, path, **kw)
        except ApiError as exc:
            self._log_write(method, path, sent, str(exc.code or type(exc).__name__), "")
            raise
        self._log_write(method, path, sent, str(resp.status), "" if kw.get("stream") else _resource_version(resp.data))
        return resp

    def _log_write(self, method: str, path: str, sent: float, status: str, rv: str) -> None:
        log.info("write", verb=method, **describe_path(path), status=status, rv=rv, identity=self._identity,
                 manager=self._who, sent=round(sent, 6))
