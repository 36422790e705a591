"""Process lifecycle for controllers (controller-runtime's manager).

A manager owns: a server client, an informer cache scoped to a set of namespaces (or all), the
delegating client controllers use (cached reads, direct writes, `disable_cache_for` kinds read
live), field indexes, runnables, the probe and metrics endpoints, and an optional leader elector.

Start order: HTTP servers → caches (wait for sync, then `after_caches_synced`: a long-running binary
freezes them out of the collector there, sriovop.runtime.gcfreeze) → runnables that do not need leadership →
leader election → leader-gated runnables once elected (at once without an elector).
Stop order (graceful timeout shared by all steps): non-leader runnables → leader-gated runnables →
caches → HTTP servers → elector (so a lease is released only after leader work has stopped).
An exception from any runnable stops the manager and is raised from `start()`. Losing leadership
stops it with no grace period and raises `LeaderElectionLost`.

Metrics: everything (controllers, work queues, this process) registers on one CollectorRegistry,
prometheus-client's process-wide default unless `registry=` is given. The registry is per process,
not per manager: in a process with two managers give one a `metrics_bind_address` and leave the other
without; both managers' controllers appear on that one endpoint.

```
mgr = Manager(load_config(None), namespaces={"sriov-network-operator"},
              metrics_bind_address=":9090", health_probe_bind_address=":8081")
mgr.index_field(SRIOV_NETWORK, "spec.networkNamespace", lambda o: o["spec"].get("networkNamespace"))
ctrl = Controller("networks", reconcile, workers=2).watches(mgr.cache.informers_for(SRIOV_NETWORK))
mgr.add(ctrl)
mgr.start(stop_event)      # blocks until stop_event is set or something fails
```
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import structlog
from prometheus_client import REGISTRY, CollectorRegistry

from sriovop.runtime.cache.informer import Transform
from sriovop.runtime.cache.reader import Cache, Extractor
from sriovop.runtime.client import Client, DelegatingClient, UncachedReader
from sriovop.runtime.config import RestConfig
from sriovop.runtime.kinds import Kind
from sriovop.runtime.serving import Check, Endpoints, HttpServer

log = structlog.get_logger(__name__)


class Runnable(Protocol):
    """Anything with `start(stop)` that blocks until `stop` is set. Raising stops the manager.
    An attribute `need_leader_election` (default True, as in controller-runtime) gates it."""

    def start(self, stop: threading.Event) -> None: ...


class LeaderElector(Protocol):
    """The seam for sriovop.runtime.leaderelection: `run` blocks, calls `on_started_leading` once
    elected and `on_stopped_leading` when it stops (always, even if it never led). If the elector has
    `stop()`, the manager calls it last during shutdown (after leader work ended) and waits for `run`."""

    def run(self, on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None]) -> None: ...


class ManagerError(RuntimeError):
    pass


class LeaderElectionLost(ManagerError):
    def __init__(self) -> None:
        super().__init__("leader election lost")


class _FuncRunnable:
    def __init__(self, fn: Callable[[threading.Event], None], need_leader_election: bool) -> None:
        self.fn = fn
        self.need_leader_election = need_leader_election
        self.name = getattr(fn, "__name__", repr(fn))

    def start(self, stop: threading.Event) -> None:
        self.fn(stop)


class _Group:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stop = threading.Event()
        self.started = False
        self.entries: list[tuple[Any, threading.Thread | None]] = []


class Manager:
    def __init__(
        self, config: RestConfig | Client, *, name: str = "manager", namespaces: Iterable[str] | None = None,
        disable_cache_for: Iterable[Kind] = (), metrics_bind_address: str | None = None,
        health_probe_bind_address: str | None = None, leader_elector: LeaderElector | None = None,
        graceful_shutdown_timeout: float = 30.0, registry: CollectorRegistry | None = None,
        read_timeout: float | None = None, resync_period: float = 0.0, cache_sync_timeout: float = 120.0,
        strip_managed_fields: bool = True, compact_cache_for: Iterable[Kind] = (),
        cache_transforms: Mapping[Kind, Transform] | None = None,
        after_caches_synced: Callable[[], object] | None = None,
    ) -> None:
        self.name = name
        self.server_client = config if isinstance(config, Client) else Client(config)
        self.cache = Cache(self.server_client, namespaces=namespaces, resync_period=resync_period,
                           read_timeout=read_timeout, strip_managed_fields=strip_managed_fields,
                           sync_timeout=cache_sync_timeout, compact_kinds=compact_cache_for,
                           transforms=cache_transforms)
        self.client = DelegatingClient(self.server_client, self.cache, disable_cache_for)
        self.api_reader = UncachedReader(self.server_client)
        self.registry = registry if registry is not None else REGISTRY
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.cache_sync_timeout = cache_sync_timeout
        self.after_caches_synced = after_caches_synced
        self.leader_elector = leader_elector
        self.elected = threading.Event()
        self._metrics_address = metrics_bind_address if metrics_bind_address not in ("", "0") else None
        self._probe_address = health_probe_bind_address or None
        self._endpoints = Endpoints()
        self._endpoints.registry = self.registry
        self._endpoints.healthz["ping"] = lambda: None
        self._endpoints.readyz["informers"] = self._check_caches
        self._servers: list[HttpServer] = []
        self._metrics_server: HttpServer | None = None
        self._probe_server: HttpServer | None = None
        self._others = _Group("others")
        self._leader = _Group("leader-election")
        self._errors: queue.Queue[BaseException] = queue.Queue()
        self._lock = threading.Lock()
        self._stop_requested = threading.Event()
        self._shutting_down = False
        self._started = False
        self._elector_thread: threading.Thread | None = None
        self._leading = False
        self._log = log.bind(manager=name)

    # -- configuration -------------------------------------------------------------------------

    def index_field(self, kind: Kind, field: str, extractor: Extractor) -> None:
        self.cache.index_field(kind, field, extractor)

    def add_healthz_check(self, name: str, check: Check) -> None:
        self._endpoints.healthz[name] = check

    def add_readyz_check(self, name: str, check: Check) -> None:
        self._endpoints.readyz[name] = check

    def add(self, runnable: Runnable | Callable[[threading.Event], None], *,
            need_leader_election: bool | None = None) -> None:
        """Add a runnable (an object with `start(stop)` or a function of `stop`); may be called after
        start, in which case it starts at once if its group is running."""
        if not hasattr(runnable, "start"):
            runnable = _FuncRunnable(runnable, True if need_leader_election is None else need_leader_election)
        gated = need_leader_election
        if gated is None:
            gated = bool(getattr(runnable, "need_leader_election", True))
        group = self._leader if gated else self._others
        with self._lock:
            if self._shutting_down:
                raise ManagerError(f"manager {self.name} is stopping; cannot add a runnable")
            if group.started:
                group.entries.append((runnable, self._spawn(runnable, group)))
            else:
                group.entries.append((runnable, None))

    @property
    def metrics_port(self) -> int | None:
        """The metrics port once listening (None before start or without a metrics address)."""
        return self._metrics_server.bound_port if self._metrics_server else None

    @property
    def probe_port(self) -> int | None:
        return self._probe_server.bound_port if self._probe_server else None

    def _check_caches(self) -> None:
        if not self.cache.has_synced():
            raise ManagerError("informer caches have not synced")

    # -- lifecycle -----------------------------------------------------------------------------

    def _spawn(self, runnable: Any, group: _Group) -> threading.Thread:
        name = getattr(runnable, "name", type(runnable).__name__)

        def run() -> None:
            try:
                runnable.start(group.stop)
            except BaseException as exc:
                self._log.error("runnable failed", runnable=name, error=repr(exc))
                self._errors.put(exc)
                self._stop_requested.set()

        t = threading.Thread(target=run, name=f"{self.name}-{name}", daemon=True)
        t.start()
        return t

    def _start_group(self, group: _Group) -> None:
        with self._lock:
            if group.started or self._shutting_down:
                return
            group.started = True
            group.entries = [(r, self._spawn(r, group)) for r, _ in group.entries]

    def _start_servers(self) -> None:
        ep = self._endpoints
        same = self._metrics_address == self._probe_address and not self._metrics_address.endswith(":0") \
            if self._metrics_address else False
        if same and self._metrics_address:
            ep.serve_metrics = ep.serve_probes = True
            srv = HttpServer(self._metrics_address, ep, f"{self.name}-http")
            self._metrics_server = self._probe_server = srv
            self._servers.append(srv)
        else:
            if self._metrics_address:
                mep = Endpoints()
                mep.registry, mep.serve_metrics = self.registry, True
                self._metrics_server = HttpServer(self._metrics_address, mep, f"{self.name}-metrics")
                self._servers.append(self._metrics_server)
            if self._probe_address:
                ep.serve_probes = True
                self._probe_server = HttpServer(self._probe_address, ep, f"{self.name}-probes")
                self._servers.append(self._probe_server)
        for s in self._servers:
            s.start()

    def start(self, stop: threading.Event | None = None) -> None:
        """Run until `stop` is set (or `self.stop()` is called). Raises the first runnable error."""
        if self._started:
            raise ManagerError(f"manager {self.name} was already started")
        self._started = True
        stop = stop or threading.Event()

        def watch_stop() -> None:
            stop.wait()
            self._stop_requested.set()

        watcher = threading.Thread(target=watch_stop, name=f"{self.name}-stop-watch", daemon=True)
        watcher.start()
        self._cache_stop = threading.Event()
        try:
            self._start_servers()
            self.cache.start(self._cache_stop)
            self._wait_for_caches()
            if self.after_caches_synced is not None and not self._stop_requested.is_set():
                self.after_caches_synced()
            self._start_group(self._others)
            if self.leader_elector is None:
                self._on_started_leading()
            else:
                self._elector_thread = threading.Thread(target=self._run_elector, name=f"{self.name}-elector",
                                                        daemon=True)
                self._elector_thread.start()
            self._log.info("manager started")
            self._stop_requested.wait()
        except BaseException as exc:
            self._errors.put(exc)
        first: BaseException | None = None
        try:
            first = self._errors.get_nowait()
        except queue.Empty:
            pass
        grace = 0.0 if isinstance(first, LeaderElectionLost) else self.graceful_shutdown_timeout
        leftover = self._engage_stop(grace)
        stop.set()
        if first is not None:
            raise first
        if leftover:
            raise ManagerError(f"failed waiting for all runnables to end within grace period of {grace}s: "
                               f"{', '.join(leftover)}")

    def _wait_for_caches(self) -> None:
        deadline = time.monotonic() + self.cache_sync_timeout
        while not self.cache.wait_for_cache_sync(0.2):
            if self._stop_requested.is_set():
                return
            if time.monotonic() > deadline:
                raise ManagerError(f"manager {self.name}: caches did not sync within {self.cache_sync_timeout}s")

    def stop(self) -> None:
        self._stop_requested.set()

    def _run_elector(self) -> None:
        assert self.leader_elector is not None
        try:
            self.leader_elector.run(self._on_started_leading, self._on_stopped_leading)
        except BaseException as exc:
            if not self._shutting_down:
                self._errors.put(exc)
                self._stop_requested.set()

    def _on_started_leading(self) -> None:
        self._leading = True
        self._start_group(self._leader)
        self.elected.set()
        self._log.info("leader-gated runnables started")

    def _on_stopped_leading(self) -> None:
        was_leading, self._leading = self._leading, False
        if self._shutting_down:
            return
        if was_leading:
            self._errors.put(LeaderElectionLost())
        else:
            self._errors.put(ManagerError("leader election ended before this replica was elected"))
        self._stop_requested.set()

    def _engage_stop(self, grace: float) -> list[str]:
        with self._lock:
            self._shutting_down = True
        deadline = time.monotonic() + grace
        leftover: list[str] = []
        for group in (self._others, self._leader):
            group.stop.set()
            for runnable, thread in group.entries:
                if thread is None:
                    continue
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    leftover.append(getattr(runnable, "name", type(runnable).__name__))
        self._cache_stop.set()
        self.cache.stop(max(0.1, min(5.0, deadline - time.monotonic())))
        for s in self._servers:
            s.stop()
        if self.leader_elector is not None:
            stopper = getattr(self.leader_elector, "stop", None)
            if callable(stopper):
                stopper()
            if self._elector_thread is not None:
                self._elector_thread.join(max(1.0, deadline - time.monotonic()))
        self._log.info("manager stopped", leftover=leftover)
        return leftover
