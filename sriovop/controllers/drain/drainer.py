"""Cordon a node and evict its pods through the Eviction API, as `kubectl drain` does.

Evictions (not deletes) are what make PodDisruptionBudgets count: the API server refuses an eviction
that would break a budget with 429, and the drain keeps retrying until its timeout (90 s upstream),
then the whole attempt is retried (3 attempts, 2 s then 4 s apart). The node stays cordoned when all
attempts fail; the controller's rate-limited requeue starts the next round.

Unlike upstream, the pod holding a drain up is not only in a log line: `on_blocked` is called as
soon as an eviction is refused (and again when the blocker changes), so the controller can put it on
the NodeState and in an Event while the drain is still trying.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from sriovop.controllers.drain.pods import pod_key, pods_to_evict
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, NotFound, TooManyRequests
from sriovop.runtime.kinds import NODE, POD

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT = 90.0
DEFAULT_ATTEMPTS = 3
DEFAULT_RETRY_DELAY = 2.0
#: kubectl drain waits this long before asking again after a refused eviction.
DEFAULT_EVICTION_RETRY_INTERVAL = 5.0
DEFAULT_POLL_INTERVAL = 1.0


@dataclass(frozen=True)
class Blocker:
    """The pod a drain is waiting for and why, rendered `namespace/name: reason`."""

    pod: str
    reason: str

    def __str__(self) -> str:
        return f"{self.pod}: {self.reason}"


class DrainFailed(Exception):
    """Every drain attempt failed; `blocker` names the pod that was still in the way, if one was."""

    def __init__(self, message: str, blocker: Blocker | None = None) -> None:
        super().__init__(message)
        self.blocker = blocker


class DrainStopped(Exception):
    """The process is shutting down; the drain is abandoned (the next leader picks it up)."""


class _AttemptFailed(Exception):
    def __init__(self, message: str, blocker: Blocker | None) -> None:
        super().__init__(message)
        self.blocker = blocker


BlockedCallback = Callable[[str, Blocker], None]


def _eviction_refusal(exc: ApiError) -> str:
    causes = "; ".join(str(c.get("message")) for c in exc.causes if c.get("message"))
    message = str(exc.status.get("message") or exc.message)
    return f"eviction refused: {message}" + (f" ({causes})" if causes else "")


class Drainer:
    def __init__(
        self, client: Client, resource_prefix: str, *, timeout: float = DEFAULT_TIMEOUT,
        attempts: int = DEFAULT_ATTEMPTS, retry_delay: float = DEFAULT_RETRY_DELAY,
        eviction_retry_interval: float = DEFAULT_EVICTION_RETRY_INTERVAL,
        poll_interval: float = DEFAULT_POLL_INTERVAL, stop: threading.Event | None = None,
    ) -> None:
        if not resource_prefix:
            raise ValueError("resource_prefix is empty: a partial drain could not tell SR-IOV pods apart")
        self.client = client
        self.resource_prefix = resource_prefix
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.retry_delay = retry_delay
        self.eviction_retry_interval = eviction_retry_interval
        self.poll_interval = poll_interval
        self.stop_event = stop or threading.Event()

    # -- cordon ----------------------------------------------------------------------------------

    def cordon(self, node_name: str) -> None:
        self._set_unschedulable(node_name, True)

    def uncordon(self, node_name: str) -> None:
        self._set_unschedulable(node_name, False)

    def _set_unschedulable(self, node_name: str, value: bool) -> None:
        node = self.client.get(NODE, node_name)
        if bool((node.get("spec") or {}).get("unschedulable")) == value:
            return
        self.client.patch(NODE, node_name, {"spec": {"unschedulable": value or None}})
        log.info("node cordoned" if value else "node uncordoned", node=node_name)

    # -- drain -----------------------------------------------------------------------------------

    def drain(self, node_name: str, *, full: bool, on_blocked: BlockedCallback | None = None) -> None:
        """Cordon and evict; returns when every pod to remove is gone. Raises DrainFailed/DrainStopped."""
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.retry_delay, exp_base=2),
            retry=retry_if_exception_type(_AttemptFailed),
            sleep=self._sleep,
            reraise=False,
        )
        try:
            for attempt in retrying:
                with attempt:
                    self._attempt(node_name, full, on_blocked)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            blocker = last.blocker if isinstance(last, _AttemptFailed) else None
            raise DrainFailed(f"drain of node {node_name} failed after {self.attempts} attempts: {last}",
                              blocker) from last

    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(seconds):
            raise DrainStopped("shutting down")

    def _attempt(self, node_name: str, full: bool, on_blocked: BlockedCallback | None) -> None:
        try:
            self.cordon(node_name)
            listed = self.client.list(POD, field_selector={"spec.nodeName": node_name})
        except ApiError as exc:
            raise _AttemptFailed(f"cannot cordon node {node_name} or list its pods: {exc}", None) from exc
        pending = {pod_key(p): p for p in pods_to_evict(listed, full=full, resource_prefix=self.resource_prefix)}
        log.info("draining node", node=node_name, full=full, pods=sorted(pending))
        evicted: set[str] = set()
        next_try: dict[str, float] = {}
        blocked: dict[str, Blocker] = {}
        reported: Blocker | None = None
        deadline = time.monotonic() + self.timeout
        while pending:
            now = time.monotonic()
            for key, pod in list(pending.items()):
                if key in evicted or now < next_try.get(key, 0.0):
                    continue
                try:
                    self._evict(pod)
                except NotFound:
                    pending.pop(key)
                    continue
                except TooManyRequests as exc:
                    blocked[key] = Blocker(key, _eviction_refusal(exc))
                    next_try[key] = now + self.eviction_retry_interval
                    continue
                except ApiError as exc:
                    raise _AttemptFailed(f"evicting pod {key}: {exc}", Blocker(key, f"eviction failed: {exc}")) from exc
                evicted.add(key)
                blocked.pop(key, None)
                log.info("pod evicted", node=node_name, pod=key)
            if blocked and on_blocked is not None:
                first = blocked[min(blocked)]
                if first != reported:
                    reported = first
                    on_blocked(node_name, first)
            if evicted:
                self._forget_deleted(node_name, pending, evicted)
            if not pending:
                break
            if time.monotonic() >= deadline:
                key = min(pending)
                blocker = blocked.get(key) or Blocker(key, "evicted but not yet deleted (still terminating)")
                raise _AttemptFailed(f"timed out after {self.timeout:g}s waiting for {sorted(pending)}", blocker)
            if self.stop_event.wait(self.poll_interval):
                raise DrainStopped("shutting down")
        log.info("node drained", node=node_name, full=full)

    def _evict(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
        self.client.request("POST", POD.object_path(meta["name"], meta["namespace"]) + "/eviction", body=body)

    def _forget_deleted(self, node_name: str, pending: dict[str, Any], evicted: set[str]) -> None:
        """Drop evicted pods that are gone (or replaced by a new pod of the same name)."""
        try:
            live = {pod_key(p): p["metadata"].get("uid")
                    for p in self.client.list(POD, field_selector={"spec.nodeName": node_name})}
        except ApiError as exc:
            log.warning("cannot list pods while draining; will retry", node=node_name, error=str(exc))
            return
        for key in list(evicted):
            if live.get(key) != pending[key]["metadata"].get("uid"):
                pending.pop(key)
                evicted.discard(key)
