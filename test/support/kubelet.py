"""A stand-in for the kubelet in tests without nodes: pods "run" and terminating pods go away.

The API server only marks an evicted or deleted pod (deletionTimestamp + grace period); the kubelet
is what finally removes it. `FakeKubelet` watches pods and deletes every terminating one with grace
period 0 (pinned to its uid), so drains in tests finish the way they do on a real node.
`mark_running` sets the status a kubelet would report, which matters to the Eviction API: a Pending
pod ignores PodDisruptionBudgets, a Running+Ready one is protected by them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, Conflict, NotFound
from sriovop.runtime.kinds import POD


def mark_running(client: Client, pod: Mapping[str, Any]) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = pod["metadata"]
    status = {"status": {
        "phase": "Running", "startTime": now,
        "conditions": [{"type": cond, "status": "True", "lastTransitionTime": now}
                       for cond in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
    }}
    return client.patch(POD, meta["name"], status, meta["namespace"], subresource="status")


class FakeKubelet:
    """`with FakeKubelet(client, namespace=ns) as kubelet:` - finalises pod deletions until exit."""

    def __init__(self, client: Client, namespace: str | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.finalized: list[str] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)

    def __enter__(self) -> FakeKubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(10)

    def _finalize(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp"):
            return
        try:
            self.client.delete(POD, meta["name"], meta["namespace"], grace_period_seconds=0,
                               preconditions={"uid": meta["uid"]})
            self.finalized.append(f"{meta['namespace']}/{meta['name']}")
        except (NotFound, Conflict):
            pass  # already gone, or a new pod took the name
        except ApiError as exc:
            self.errors.append(str(exc))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                page = self.client.list_page(POD, self.namespace)
                for pod in page.items:
                    self._finalize(pod)
                self._stream = self.client.watch(POD, self.namespace, resource_version=page.resource_version,
                                                 timeout_seconds=300)
                if self._stop.is_set():
                    self._stream.close()
                    return
                for etype, pod in self._stream:
                    if etype in ("ADDED", "MODIFIED"):
                        self._finalize(pod)
                    if self._stop.is_set():
                        return
            except ApiError as exc:
                if not self._stop.is_set():
                    self.errors.append(str(exc))
                    self._stop.wait(0.5)
