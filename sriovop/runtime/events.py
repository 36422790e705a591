"""An Events recorder: core/v1 Events about objects, written in the background.

Why this shape (client-go tools/record): recording an event must never slow down or fail a reconcile,
so `event()` only enqueues into a bounded queue (dropping, and counting, when full). A single writer
thread then applies, in client-go's order:
  1. a spam filter - a token bucket per (object, reason), so a hot loop cannot flood etcd;
  2. aggregation - from the `aggregate_max`-th distinct message for the same (object, type, reason)
     (with no gap over `aggregate_window`), events collapse into one "(combined from similar
     events): <latest message>" Event whose count grows;
  3. deduplication - a repeat of an identical event PATCHes the existing Event's count and
     lastTimestamp instead of creating another object (client-go's EventCorrelator/eventLogger).

    recorder = EventRecorder(client, component="sriov-network-operator")
    recorder.event(policy, "Normal", "Rendered", "rendered 3 DaemonSets")
    recorder.eventf(node_state, "Warning", "DrainFailed", "drain of %s failed: %s", node, err)
    recorder.stop()   # flushes what is queued (bounded by a timeout)
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog
from prometheus_client import Counter
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from sriovop.runtime.errors import ApiError, Conflict, NotFound, ServerError, TooManyRequests
from sriovop.runtime.kinds import EVENT

log = structlog.get_logger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
EVENT_TYPES = (NORMAL, WARNING)

# client-go record defaults.
DEFAULT_QUEUE_SIZE = 1000
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300
DEFAULT_AGGREGATE_MAX = 10
DEFAULT_AGGREGATE_WINDOW = 600.0
DEFAULT_CACHE_SIZE = 4096
MAX_MESSAGE_LENGTH = 1024
COMBINED_PREFIX = "(combined from similar events): "

EVENTS_DROPPED = Counter(
    "events_recorder_dropped", "Events not written, by why (queue_full, rate_limited, write_failed)",
    ("reason",),
)


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, ServerError | TooManyRequests) or (isinstance(exc, ApiError) and exc.code == 0)


WRITE_ATTEMPTS = 12
"""Tries per Event write, as client-go's recorder (maxTriesPerEvent)."""

# A restarting or throttling API server (connection refused, 429, 5xx) must not lose an event: client-go
# tries 12 times, 10 s apart. Here the waits grow from 0.2 s to 10 s (about a minute in all), so a blip
# costs a fraction of a second. Only the writer thread waits: `event()` never does, and while the server
# stays away the bounded queue fills and drops (queue_full), as client-go's does; `stop()` is bounded.
_retry_transient = retry(
    retry=retry_if_exception(_transient),
    stop=stop_after_attempt(WRITE_ATTEMPTS), wait=wait_exponential(multiplier=0.2, max=10.0), reraise=True,
)


class EventWriter(Protocol):
    """The part of sriovop.runtime.client.Client the recorder needs."""

    def create(self, kind: Any, obj: Mapping[str, Any], namespace: str | None = None) -> Any: ...

    def patch(self, kind: Any, name: str, patch: Any, namespace: str | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class _Ref:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str

    def as_dict(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        if self.resource_version:
            ref["resourceVersion"] = self.resource_version
        return ref


@dataclass(frozen=True, slots=True)
class _Pending:
    ref: _Ref
    type: str
    reason: str
    message: str
    at: float  # wall-clock seconds: Event timestamps are wall time by definition


@dataclass(slots=True)
class _Written:
    name: str
    namespace: str
    count: int
    first_timestamp: str


class _TokenBucket:
    __slots__ = ("last", "tokens")

    def __init__(self, burst: int, now: float) -> None:
        self.tokens = float(burst)
        self.last = now

    def take(self, qps: float, burst: int, now: float) -> bool:
        self.tokens = min(float(burst), self.tokens + max(0.0, now - self.last) * qps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def object_reference(obj: Mapping[str, Any]) -> _Ref:
    """The involvedObject for `obj`; clear errors when it lacks what an Event needs to point at it."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise ValueError("event object: metadata.name is required to record an event about it")
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if not kind or not api_version:
        raise ValueError(f"event object {meta.get('name')!r}: kind and apiVersion are required")
    return _Ref(str(api_version), str(kind), str(meta.get("namespace") or ""), str(meta["name"]),
                str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))


def _rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events asynchronously; see the module docstring for the pipeline."""

    def __init__(
        self,
        client: EventWriter,
        component: str,
        *,
        host: str | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        spam_burst: int = DEFAULT_SPAM_BURST,
        spam_qps: float = DEFAULT_SPAM_QPS,
        aggregate_max: int = DEFAULT_AGGREGATE_MAX,
        aggregate_window: float = DEFAULT_AGGREGATE_WINDOW,
        cache_size: int = DEFAULT_CACHE_SIZE,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not component:
            raise ValueError("component: an event source component name is required")
        if queue_size < 1:
            raise ValueError(f"queue_size must be >= 1, got {queue_size!r}")
        if spam_burst < 1 or spam_qps <= 0:
            raise ValueError(f"spam_burst must be >= 1 and spam_qps > 0, got {spam_burst!r}, {spam_qps!r}")
        self._client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._queue: queue.Queue[_Pending | None] = queue.Queue(maxsize=queue_size)
        self._spam_burst = spam_burst
        self._spam_qps = spam_qps
        self._aggregate_max = aggregate_max
        self._aggregate_window = aggregate_window
        self._cache_size = cache_size
        self._wall = wall_clock
        self._mono = monotonic
        # Writer-thread state only (no locks needed).
        self._buckets: OrderedDict[tuple[_Ref, str], _TokenBucket] = OrderedDict()
        self._similar: OrderedDict[tuple[_Ref, str, str], tuple[float, set[str]]] = OrderedDict()
        self._written: OrderedDict[tuple[_Ref, str, str, str], _Written] = OrderedDict()
        self._last_name_ns = 0
        self._pending = 0
        self._pending_cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"events-{component}", daemon=True)
        self._thread.start()

    # --- caller side: never blocks -----------------------------------------------------------------
    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """Record an event about `obj` (a dict with kind, apiVersion and metadata.name at least)."""
        if type not in EVENT_TYPES:
            raise ValueError(f"event type {type!r} is not one of {EVENT_TYPES}")
        if not reason:
            raise ValueError("event reason is required (a short UpperCamelCase word)")
        ref = object_reference(obj)
        if len(message) > MAX_MESSAGE_LENGTH:
            message = message[: MAX_MESSAGE_LENGTH - 3] + "..."
        with self._pending_cond:
            if self._stopped:
                return
            try:
                self._queue.put_nowait(_Pending(ref, type, reason, message, self._wall()))
            except queue.Full:
                EVENTS_DROPPED.labels("queue_full").inc()
                log.warning("event dropped: recorder queue full", reason=reason, object=ref.name)
                return
            self._pending += 1

    def eventf(self, obj: Mapping[str, Any], type: str, reason: str, fmt: str, *args: object) -> None:
        self.event(obj, type, reason, fmt % args if args else fmt)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event enqueued so far has been handled; False if `timeout` ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._pending_cond:
            while self._pending:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._pending_cond.wait(remaining)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting events, write what is queued (within `timeout`), and end the writer thread."""
        with self._pending_cond:
            if self._stopped:
                return
            self._stopped = True
        deadline = time.monotonic() + timeout
        try:
            self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
        except queue.Full:
            log.warning("event recorder stop: queue still full at the timeout; dropping the rest")
        self._thread.join(max(0.0, deadline - time.monotonic()))

    # --- writer thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._handle(item)
            except Exception:  # one bad event must not kill the writer thread
                log.exception("event recorder: unexpected error", reason=item.reason)
            finally:
                with self._pending_cond:
                    self._pending -= 1
                    self._pending_cond.notify_all()

    def _handle(self, ev: _Pending) -> None:
        now = self._mono()
        bucket_key = (ev.ref, ev.reason)
        bucket = self._buckets.get(bucket_key)
        if bucket is None:
            bucket = self._buckets[bucket_key] = _TokenBucket(self._spam_burst, now)
            self._trim(self._buckets)
        self._buckets.move_to_end(bucket_key)
        if not bucket.take(self._spam_qps, self._spam_burst, now):
            EVENTS_DROPPED.labels("rate_limited").inc()
            return
        message, combined = self._aggregate(ev, now)
        # All combined events of one (object, type, reason) share one Event, as in client-go.
        key = (ev.ref, ev.type, ev.reason, COMBINED_PREFIX if combined else message)
        written = self._written.get(key)
        try:
            if written is not None:
                self._written.move_to_end(key)
                if self._bump(written, ev, message):
                    return
            self._written[key] = self._create(ev, message)
            self._trim(self._written)
        except ApiError as exc:
            EVENTS_DROPPED.labels("write_failed").inc()
            log.warning("event not written", reason=ev.reason, object=ev.ref.name, error=str(exc))

    def _aggregate(self, ev: _Pending, now: float) -> tuple[str, bool]:
        """client-go EventAggregator: from the `aggregate_max`-th distinct message for one
        (object, type, reason), seen with gaps under `aggregate_window`, events are combined."""
        key = (ev.ref, ev.type, ev.reason)
        last, messages = self._similar.get(key, (now, set()))
        if now - last > self._aggregate_window:
            messages = set()
        messages.add(ev.message)
        self._similar[key] = (now, messages)
        self._similar.move_to_end(key)
        self._trim(self._similar)
        if len(messages) >= self._aggregate_max:
            return COMBINED_PREFIX + ev.message, True
        return ev.message, False

    @_retry_transient
    def _patch(self, name: str, namespace: str, body: dict[str, Any]) -> None:
        self._client.patch(EVENT, name, body, namespace=namespace)

    @_retry_transient
    def _post(self, namespace: str, body: dict[str, Any]) -> None:
        self._client.create(EVENT, body, namespace=namespace)

    def _bump(self, written: _Written, ev: _Pending, message: str) -> bool:
        """PATCH count/lastTimestamp/message of an Event already written; False if it is gone."""
        try:
            self._patch(written.name, written.namespace,
                        {"count": written.count + 1, "lastTimestamp": _rfc3339(ev.at), "message": message})
        except NotFound:
            return False
        written.count += 1
        return True

    def _create(self, ev: _Pending, message: str) -> _Written:
        namespace = ev.ref.namespace or "default"  # cluster-scoped objects: client-go uses "default"
        timestamp = _rfc3339(ev.at)
        name = f"{ev.ref.name}.{self._unique_ns(ev.at):x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ev.ref.as_dict(),
            "reason": ev.reason,
            "message": message,
            "type": ev.type,
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
        }
        try:
            self._post(namespace, body)
        except Conflict as exc:
            if not exc.already_exists:
                raise
        return _Written(name, namespace, 1, timestamp)

    def _unique_ns(self, at: float) -> int:
        """client-go names Events `<object>.<unix nanos in hex>`; keep ours unique within the process."""
        ns = max(int(at * 1e9), self._last_name_ns + 1)
        self._last_name_ns = ns
        return ns

    def _trim(self, cache: OrderedDict[Any, Any]) -> None:
        while len(cache) > self._cache_size:
            cache.popitem(last=False)
