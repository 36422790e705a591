"""Record every holder change of the operator's Lease, by watching it (re-listing after API outages)."""

from __future__ import annotations

import threading
import time
from typing import Any

from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import LEASE
from test.support.failover_analysis import LeaseChange


class LeaseRecorder:
    def __init__(self, client: Client, namespace: str, name: str) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.changes: list[LeaseChange] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stream: Any = None
        self.thread = threading.Thread(target=self._run, name="lease-recorder", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        self.thread.join(10)

    def holder(self) -> str:
        with self._lock:
            return self.changes[-1].holder if self.changes else ""

    def snapshot(self) -> list[LeaseChange]:
        with self._lock:
            return list(self.changes)

    def _record(self, lease: dict[str, Any] | None) -> None:
        spec = (lease or {}).get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        with self._lock:
            if self.changes and self.changes[-1].holder == holder:
                return
            self.changes.append(LeaseChange(time.time(), holder, int(spec.get("leaseTransitions") or 0)))

    def _run(self) -> None:
        selector = {"metadata.name": self.name}
        while not self._stop.is_set():
            try:
                try:
                    lease = self.client.get(LEASE, self.name, self.namespace)
                    self._record(lease)
                    rv = lease["metadata"]["resourceVersion"]
                except NotFound:
                    rv = self.client.list_page(LEASE, self.namespace, field_selector=selector).resource_version
                stream = self.client.watch(LEASE, self.namespace, resource_version=rv, field_selector=selector,
                                           timeout_seconds=60, read_timeout=70)
                self._stream = stream
                for etype, obj in stream:
                    if etype in ("ADDED", "MODIFIED"):
                        self._record(obj)
                    elif etype == "DELETED":
                        self._record(None)
            except ApiError:
                pass
            except Exception:  # a stream closed by stop() breaks the read in several ways
                if self._stop.is_set():
                    return
            self._stop.wait(0.1)
