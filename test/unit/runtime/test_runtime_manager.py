"""Manager lifecycle and controller result handling (no API server needed: no informers are used)."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import Configuration
from prometheus_client import CollectorRegistry

from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.controller import Controller, Request, Result, TerminalError
from sriovop.runtime.manager import LeaderElectionLost, Manager, ManagerError
from sriovop.runtime.workqueue import ItemExponentialFailureRateLimiter
from test.support.poll import wait_for


def offline_client() -> Client:
    cfg = Configuration()
    cfg.host = "https://127.0.0.1:9"  # never contacted: these tests use no informers
    return Client(RestConfig(configuration=cfg))


class Recorder:
    def __init__(self, name: str, log: list[str], gated: bool, fail_after: float | None = None,
                 ignore_stop: bool = False) -> None:
        self.name = name
        self.log = log
        self.need_leader_election = gated
        self.fail_after = fail_after
        self.ignore_stop = ignore_stop
        self.started = threading.Event()

    def start(self, stop: threading.Event) -> None:
        self.log.append(f"start {self.name}")
        self.started.set()
        if self.fail_after is not None:
            time.sleep(self.fail_after)
            raise RuntimeError(f"{self.name} broke")
        if self.ignore_stop:
            time.sleep(3)
        stop.wait()
        self.log.append(f"stop {self.name}")


class FakeElector:
    def __init__(self) -> None:
        self.started: Callable[[], None] | None = None
        self.stopped: Callable[[], None] | None = None
        self.stop_called = threading.Event()
        self.log: list[str] | None = None

    def run(self, on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None]) -> None:
        self.started, self.stopped = on_started_leading, on_stopped_leading
        self.stop_called.wait()
        on_stopped_leading()

    def stop(self) -> None:
        if self.log is not None:
            self.log.append("elector stop")
        self.stop_called.set()


def run_manager(mgr: Manager) -> tuple[threading.Thread, threading.Event, list[BaseException]]:
    stop = threading.Event()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            mgr.start(stop)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=target)
    t.start()
    return t, stop, errors


def test_leader_gated_runnables_wait_for_election_and_stop_in_order() -> None:
    log: list[str] = []
    elector = FakeElector()
    elector.log = log
    mgr = Manager(offline_client(), leader_elector=elector, registry=CollectorRegistry())
    free, gated = Recorder("free", log, gated=False), Recorder("gated", log, gated=True)
    mgr.add(free)
    mgr.add(gated)
    t, stop, errors = run_manager(mgr)
    free.started.wait(5)
    time.sleep(0.2)
    assert not gated.started.is_set() and not mgr.elected.is_set()
    assert elector.started is not None
    elector.started()
    gated.started.wait(5)
    assert mgr.elected.is_set()
    late = Recorder("late", log, gated=True)
    mgr.add(late)  # added after election: starts at once
    late.started.wait(5)
    stop.set()
    t.join(10)
    assert not errors
    assert log.index("stop free") < log.index("stop gated") < log.index("elector stop")
    assert log.index("stop free") < log.index("stop late") < log.index("elector stop")


def test_runnable_error_stops_manager_and_is_raised() -> None:
    log: list[str] = []
    mgr = Manager(offline_client(), registry=CollectorRegistry())
    other = Recorder("other", log, gated=True)
    mgr.add(other)
    mgr.add(Recorder("bad", log, gated=False, fail_after=0.1))
    t, _stop, errors = run_manager(mgr)
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and "bad broke" in str(errors[0])
    assert "stop other" in log


def test_function_runnables_and_lost_leadership() -> None:
    elector = FakeElector()
    mgr = Manager(offline_client(), leader_elector=elector, registry=CollectorRegistry())
    ran = threading.Event()

    def work(stop: threading.Event) -> None:
        ran.set()
        stop.wait()

    mgr.add(work)
    t, _stop, errors = run_manager(mgr)
    wait_for(lambda: elector.started is not None)
    assert elector.started is not None and elector.stopped is not None
    elector.started()
    ran.wait(5)
    elector.stopped()  # the lease is lost
    t.join(10)
    assert len(errors) == 1 and isinstance(errors[0], LeaderElectionLost)
    assert str(errors[0]) == "leader election lost"


def test_graceful_shutdown_timeout_is_reported() -> None:
    mgr = Manager(offline_client(), graceful_shutdown_timeout=0.3, registry=CollectorRegistry())
    slow = Recorder("slow", [], gated=True, ignore_stop=True)
    mgr.add(slow)
    t, stop, errors = run_manager(mgr)
    slow.started.wait(5)
    stop.set()
    t.join(10)
    assert len(errors) == 1 and isinstance(errors[0], ManagerError)
    assert "grace period" in str(errors[0]) and "slow" in str(errors[0])


def test_probes_and_metrics_on_own_ports_for_two_managers() -> None:
    reg = CollectorRegistry()
    a = Manager(offline_client(), name="a", registry=reg, metrics_bind_address="127.0.0.1:0",
                health_probe_bind_address="127.0.0.1:0")
    b = Manager(offline_client(), name="b", registry=reg, health_probe_bind_address="127.0.0.1:0")
    broken = {"on": True}

    def check() -> None:
        if broken["on"]:
            raise RuntimeError("webhook certs not loaded")

    b.add_readyz_check("certs", check)
    ta, sa, ea = run_manager(a)
    tb, sb, eb = run_manager(b)
    try:
        wait_for(lambda: a.probe_port is not None and b.probe_port is not None and a.metrics_port is not None)
        wait_for(lambda: _status(f"http://127.0.0.1:{b.probe_port}/healthz") == 200)
        assert _status(f"http://127.0.0.1:{a.probe_port}/readyz") == 200
        assert _status(f"http://127.0.0.1:{b.probe_port}/readyz") == 500
        assert _status(f"http://127.0.0.1:{b.probe_port}/readyz?exclude=certs") == 200
        broken["on"] = False
        assert _status(f"http://127.0.0.1:{b.probe_port}/readyz") == 200
        assert _status(f"http://127.0.0.1:{a.metrics_port}/metrics") == 200
        assert _status(f"http://127.0.0.1:{a.probe_port}/metrics") == 404
        assert b.metrics_port is None
    finally:
        sa.set()
        sb.set()
        ta.join(10)
        tb.join(10)
    assert not ea and not eb


def _status(url: str) -> int:
    try:
        return int(urllib.request.urlopen(url, timeout=5).status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_bad_bind_address_names_the_value() -> None:
    mgr = Manager(offline_client(), metrics_bind_address="localhost", registry=CollectorRegistry())
    t, _stop, errors = run_manager(mgr)
    t.join(10)
    assert errors and "localhost" in str(errors[0]) and "host:port" in str(errors[0])


def test_controller_results_requeue_forget_and_metrics() -> None:
    reg = CollectorRegistry()
    calls: dict[str, int] = {}
    lock = threading.Lock()
    concurrent: dict[str, int] = {}
    overlap: list[str] = []

    def reconcile(req: Request) -> Result | None:
        with lock:
            calls[req.name] = calls.get(req.name, 0) + 1
            n = calls[req.name]
            concurrent[req.name] = concurrent.get(req.name, 0) + 1
            if concurrent[req.name] > 1:
                overlap.append(req.name)
        try:
            time.sleep(0.002)
            if req.name == "err" and n < 3:
                raise RuntimeError("try again")
            if req.name == "terminal":
                raise TerminalError("bad spec")
            if req.name == "after" and n == 1:
                return Result(requeue_after=0.05)
            if req.name == "requeue" and n == 1:
                return Result(requeue=True)
            return None
        finally:
            with lock:
                concurrent[req.name] -= 1

    ctrl = Controller("unit", reconcile, workers=4, registry=reg,
                      rate_limiter=ItemExponentialFailureRateLimiter(0.001, 1.0))
    stop = threading.Event()
    t = threading.Thread(target=ctrl.start, args=(stop,))
    t.start()
    for name in ("ok", "err", "terminal", "after", "requeue"):
        ctrl.enqueue(Request("ns", name))
    for _ in range(50):
        ctrl.enqueue(Request("ns", "hot"))  # never two workers on one request
    wait_for(lambda: calls.get("err") == 3 and calls.get("after") == 2 and calls.get("requeue") == 2)
    wait_for(lambda: len(ctrl.queue) == 0)
    time.sleep(0.1)
    stop.set()
    t.join(10)
    assert calls["ok"] == 1 and calls["terminal"] == 1
    assert not overlap
    assert ctrl.queue.num_requeues(Request("ns", "err")) == 0

    def value(name: str, **labels: str) -> float:
        v = reg.get_sample_value(name, {"controller": "unit", **labels})
        return float(v or 0)

    assert value("controller_runtime_reconcile_errors_total") == 3  # two retries + one terminal
    assert value("controller_runtime_terminal_reconcile_errors_total") == 1
    assert value("controller_runtime_reconcile_total", result="error") == 3
    assert value("controller_runtime_reconcile_total", result="requeue_after") == 1
    assert value("controller_runtime_reconcile_total", result="requeue") == 1
    total = sum(calls.values())
    assert value("controller_runtime_reconcile_time_seconds_count") == total
    assert reg.get_sample_value("workqueue_adds_total", {"name": "unit", "controller": "unit"}) is not None


def test_controller_rejects_zero_workers() -> None:
    def noop(_r: Request) -> Any:
        return None

    with pytest.raises(ValueError, match="workers"):
        Controller("x", noop, workers=0, registry=CollectorRegistry())
