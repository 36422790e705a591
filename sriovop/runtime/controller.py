"""One reconcile loop: watches feed a rate-limited work queue, N workers call `reconcile(request)`.

Semantics follow controller-runtime: an exception → rate-limited requeue; `Result(requeue_after=s)`
→ forget then add after s; `Result(requeue=True)` → rate-limited requeue; success → forget;
`TerminalError` → counted, not requeued. A request is never reconciled by two workers at once (the
queue guarantees it). Metrics use controller-runtime's names so its dashboards work.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from sriovop.runtime.cache.informer import SharedIndexInformer
from sriovop.runtime.cache.keys import DeletedFinalStateUnknown, object_of
from sriovop.runtime.workqueue import (
    PrometheusMetricsProvider,
    RateLimitingQueue,
    default_controller_rate_limiter,
)
from sriovop.runtime.workqueue.ratelimiter import RateLimiter

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Request:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: Any) -> Request:
        meta = object_of(obj)["metadata"]
        return cls(meta.get("namespace") or "", meta["name"])


@dataclass(frozen=True, slots=True)
class Result:
    requeue: bool = False
    requeue_after: float | None = None


class TerminalError(Exception):
    """Reconcile failed in a way retrying cannot fix: counted as an error, not requeued."""


Reconciler = Callable[[Request], "Result | None"]
MapFunc = Callable[[Any], Iterable[Request]]


@runtime_checkable
class Predicate(Protocol):
    def create(self, obj: Any) -> bool: ...
    def update(self, old: Any, new: Any) -> bool: ...
    def delete(self, obj: Any) -> bool: ...


@dataclass
class Funcs:
    """A predicate from optional functions; a missing one lets its events through."""

    on_create: Callable[[Any], bool] | None = None
    on_update: Callable[[Any, Any], bool] | None = None
    on_delete: Callable[[Any], bool] | None = None

    def create(self, obj: Any) -> bool:
        return self.on_create(obj) if self.on_create else True

    def update(self, old: Any, new: Any) -> bool:
        return self.on_update(old, new) if self.on_update else True

    def delete(self, obj: Any) -> bool:
        return self.on_delete(obj) if self.on_delete else True


class GenerationChanged:
    """Skip updates that did not change metadata.generation (status-only writes, resyncs)."""

    def create(self, obj: Any) -> bool:
        return True

    def update(self, old: Any, new: Any) -> bool:
        return bool(old["metadata"].get("generation") != new["metadata"].get("generation"))

    def delete(self, obj: Any) -> bool:
        return True


class ResourceVersionChanged(GenerationChanged):
    """Skip resync updates (old and new have the same resourceVersion)."""

    def update(self, old: Any, new: Any) -> bool:
        return bool(old["metadata"].get("resourceVersion") != new["metadata"].get("resourceVersion"))


def object_predicate(fn: Callable[[Any], bool]) -> Funcs:
    """A predicate from one function of the (new) object, applied to every event type."""
    return Funcs(on_create=fn, on_update=lambda old, new: fn(new), on_delete=lambda o: fn(object_of(o)))


# -- metrics ------------------------------------------------------------------------------------

_BUCKETS = (
    [0.005, 0.01, 0.025, 0.05, 0.1] + [round(0.15 + 0.05 * i, 2) for i in range(8)]
    + [0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]
    + [6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0]
)


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.total = Counter("controller_runtime_reconcile_total",
                             "Total number of reconciliations per controller", ["controller", "result"],
                             registry=registry)
        self.errors = Counter("controller_runtime_reconcile_errors_total",
                              "Total number of reconciliation errors per controller", ["controller"],
                              registry=registry)
        self.terminal = Counter("controller_runtime_terminal_reconcile_errors_total",
                                "Total number of terminal reconciliation errors per controller",
                                ["controller"], registry=registry)
        self.time = Histogram("controller_runtime_reconcile_time_seconds",
                              "Length of time per reconciliation per controller", ["controller"],
                              buckets=_BUCKETS, registry=registry)
        self.max_concurrent = Gauge("controller_runtime_max_concurrent_reconciles",
                                    "Maximum number of concurrent reconciles per controller", ["controller"],
                                    registry=registry)
        self.active = Gauge("controller_runtime_active_workers",
                            "Number of currently used workers per controller", ["controller"],
                            registry=registry)


#: One set of metrics per registry, held only as long as the registry lives. Keyed by the registry
#: itself, not its id(): a registry freed and a new one allocated at the same address (tests create
#: one per daemon) would otherwise get the dead registry's metrics, and its counters would stay at 0.
_metrics_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, _Metrics] = weakref.WeakKeyDictionary()
_metrics_lock = threading.Lock()


def _metrics_for(registry: CollectorRegistry) -> _Metrics:
    with _metrics_lock:
        m = _metrics_by_registry.get(registry)
        if m is None:
            m = _Metrics(registry)
            _metrics_by_registry[registry] = m
        return m


# -- controller ---------------------------------------------------------------------------------


class _EnqueueHandler:
    def __init__(self, ctrl: Controller, map_func: MapFunc | None, predicates: list[Predicate]) -> None:
        self.ctrl = ctrl
        self.map_func = map_func
        self.predicates = predicates

    def _enqueue(self, obj: Any) -> None:
        requests = self.map_func(obj) if self.map_func else [Request.for_object(obj)]
        for req in requests:
            self.ctrl.queue.add(req)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if all(p.create(obj) for p in self.predicates):
            self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if all(p.update(old, new) for p in self.predicates):
            self._enqueue(new)

    def on_delete(self, obj: Any) -> None:
        if all(p.delete(obj) for p in self.predicates):
            inner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if inner is None:
                ns, _, name = obj.key.rpartition("/")
                if self.map_func is None:
                    self.ctrl.queue.add(Request(ns, name))
                return
            self._enqueue(inner)


class Controller:
    """```
    def reconcile(req: Request) -> Result | None: ...
    ctrl = Controller("networks", reconcile, workers=2)
    ctrl.watches(mgr.cache.informers_for(SRIOV_NETWORK))                          # the object itself
    ctrl.watches(mgr.cache.informers_for(NAD), map_func=lambda o: [Request(...)],  # mapped
                 predicates=[GenerationChanged()])
    mgr.add(ctrl)           # leader-gated by default; started after the caches synced
    ```
    """

    need_leader_election = True

    def __init__(
        self, name: str, reconcile: Reconciler, *, workers: int = 1, rate_limiter: RateLimiter | None = None,
        registry: CollectorRegistry | None = None, cache_sync_timeout: float = 120.0,
        need_leader_election: bool = True, shutdown_timeout: float = 30.0,
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.need_leader_election = need_leader_election
        self.cache_sync_timeout = cache_sync_timeout
        self.shutdown_timeout = shutdown_timeout
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(
            name=name, rate_limiter=rate_limiter or default_controller_rate_limiter(),
            metrics_provider=PrometheusMetricsProvider(registry) if registry is not None else None,
        )
        self._informers: list[SharedIndexInformer] = []
        self._metrics = _metrics_for(registry if registry is not None else REGISTRY)
        for result in ("success", "error", "requeue", "requeue_after"):
            self._metrics.total.labels(name, result)
        self._metrics.errors.labels(name)
        self._metrics.terminal.labels(name)
        self._log = log.bind(controller=name)

    def watches(
        self, informers: SharedIndexInformer | Iterable[SharedIndexInformer], *, map_func: MapFunc | None = None,
        predicates: Iterable[Predicate | Callable[[Any], bool]] = (),
    ) -> Controller:
        """Enqueue requests for events of these informers: the object's own (ns, name), or whatever
        `map_func(obj)` returns. Predicates (objects, or plain functions of the object) filter events."""
        preds: list[Predicate] = []
        for p in predicates:
            preds.append(p if isinstance(p, Predicate) else object_predicate(p))
        infs = [informers] if isinstance(informers, SharedIndexInformer) else list(informers)
        handler = _EnqueueHandler(self, map_func, preds)
        for inf in infs:
            inf.add_event_handler(handler)
            self._informers.append(inf)
        return self

    def enqueue(self, request: Request) -> None:
        self.queue.add(request)

    # -- runnable ------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        """Runnable: wait for the watched caches, run the workers until `stop`, then drain."""
        deadline = time.monotonic() + self.cache_sync_timeout
        for inf in self._informers:
            if not inf.wait_for_cache_sync(max(0.0, deadline - time.monotonic()), stop):
                if stop.is_set():
                    return
                raise TimeoutError(f"controller {self.name}: cache {inf.name} did not sync within "
                                   f"{self.cache_sync_timeout}s")
        self._metrics.max_concurrent.labels(self.name).set(self.workers)
        threads = [threading.Thread(target=self._worker, name=f"{self.name}-worker-{i}", daemon=True)
                   for i in range(self.workers)]
        for t in threads:
            t.start()
        self._log.info("controller started", workers=self.workers)
        stop.wait()
        self.queue.shutdown()
        deadline = time.monotonic() + self.shutdown_timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._log.info("controller stopped")

    def _worker(self) -> None:
        while True:
            req, shutdown = self.queue.get()
            if shutdown or req is None:
                return
            self._process(req)

    def _process(self, req: Request) -> None:
        m = self._metrics
        name = self.name
        active = m.active.labels(name)
        active.inc()
        start = time.perf_counter()
        try:
            result = self.reconcile(req)
        except TerminalError as exc:
            m.errors.labels(name).inc()
            m.terminal.labels(name).inc()
            m.total.labels(name, "error").inc()
            self.queue.forget(req)
            self._log.error("reconcile failed terminally", request=str(req), error=str(exc))
        except Exception as exc:
            m.errors.labels(name).inc()
            m.total.labels(name, "error").inc()
            self.queue.add_rate_limited(req)
            self._log.warning("reconcile failed, requeued", request=str(req), error=repr(exc),
                              requeues=self.queue.num_requeues(req))
        else:
            if result is not None and result.requeue_after:
                self.queue.forget(req)
                self.queue.add_after(req, result.requeue_after)
                m.total.labels(name, "requeue_after").inc()
            elif result is not None and result.requeue:
                self.queue.add_rate_limited(req)
                m.total.labels(name, "requeue").inc()
            else:
                self.queue.forget(req)
                m.total.labels(name, "success").inc()
        finally:
            m.time.labels(name).observe(time.perf_counter() - start)
            active.dec()
            self.queue.done(req)
