"""A Lease lock (client-go resourcelock.LeaseLock): optimistic concurrency on a coordination/v1 Lease.

Every write is a PUT of the Lease last read or written, carrying its resourceVersion, so of two
candidates that read the same version only one can write it; the other gets 409 Conflict. Requests
take an explicit timeout so a renewal can never outlive the elector's RenewDeadline on the wire.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from sriovop.runtime.kinds import LEASE
from sriovop.runtime.leaderelection.record import LeaderElectionRecord


class LeaseClient(Protocol):
    """The slice of sriovop.runtime.client.Client the lock uses (tests wrap it to inject faults)."""

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
                body: Any = None, content_type: str = "application/json", stream: bool = False,
                read_timeout: float | None = None) -> Any: ...

    def watch(self, kind: Any, namespace: str | None = None, *, resource_version: str | None = None,
              field_selector: Any = None, timeout_seconds: int | None = None,
              read_timeout: float | None = None) -> Any: ...


class WatchHandle(Protocol):
    """An open watch: iterate for (event type, object); close() from any thread ends it."""

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]: ...

    def close(self) -> None: ...


class ResourceLock(Protocol):
    """What the elector needs from a lock (client-go resourcelock.Interface, plus watch)."""

    identity: str

    def describe(self) -> str: ...

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, str]:
        """The record and a raw form for change detection; raises NotFound if there is no lock."""
        ...

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None: ...

    def update(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        """Compare-and-swap against the last get/create/update: Conflict if someone wrote in between."""
        ...

    def watch(self) -> WatchHandle | None:
        """Changes to the lock object as (type, object with a `spec`); None if not supported."""
        ...


class LockNotInitialized(RuntimeError):
    """update() before any get()/create(): there is no resourceVersion to guard the write with."""


class LeaseLock:
    """Usage::

        lock = LeaseLock(client, "sriov-network-operator", "a56def2a.openshift.io", identity="pod-1")
        record, raw = lock.get(timeout=10)        # NotFound when the Lease does not exist yet
        lock.update(LeaderElectionRecord(...))     # Conflict when someone wrote in between
    """

    def __init__(self, client: LeaseClient, namespace: str, name: str, identity: str,
                 labels: Mapping[str, str] | None = None) -> None:
        if not namespace:
            raise ValueError("lease namespace is empty: set --leader-election-namespace")
        if not name:
            raise ValueError("lease name is empty: set --leader-election-id")
        if not identity:
            raise ValueError("Lock identity is empty")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.labels = dict(labels or {})
        self._lease: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def path(self) -> str:
        return LEASE.object_path(self.name, self.namespace)

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, str]:
        """The current record and its raw form (for change detection); remembers the Lease."""
        lease = self._call("GET", self.path, None, timeout)
        with self._lock:
            self._lease = lease
        spec = lease.get("spec") or {}
        return LeaderElectionRecord.from_lease_spec(spec), json.dumps(spec, sort_keys=True)

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        body: dict[str, Any] = {
            "apiVersion": LEASE.api_version, "kind": LEASE.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        }
        if self.labels:
            body["metadata"]["labels"] = dict(self.labels)
        lease = self._call("POST", LEASE.collection_path(self.namespace), body, timeout)
        with self._lock:
            self._lease = lease

    def update(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        with self._lock:
            if self._lease is None:
                raise LockNotInitialized("lease not initialized, call get or create first")
            body = copy.deepcopy(self._lease)
        body["spec"] = record.to_lease_spec()
        if self.labels:
            meta = body.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **self.labels}
        lease = self._call("PUT", self.path, body, timeout)
        with self._lock:
            self._lease = lease

    def watch(self) -> WatchHandle | None:
        watch: WatchHandle = self.client.watch(
            LEASE, self.namespace, field_selector={"metadata.name": self.name}, timeout_seconds=300,
            read_timeout=330.0,
        )
        return watch

    def _call(self, method: str, path: str, body: Any, timeout: float | None) -> dict[str, Any]:
        resp = self.client.request(method, path, body=body, read_timeout=timeout)
        decoded: dict[str, Any] = json.loads(resp.data)
        return decoded
