"""Informers, cached reads, field indexes and controllers against the shared real control plane."""

from __future__ import annotations

import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from sriovop.runtime.cache import FuncHandler, SharedIndexInformer
from sriovop.runtime.cache.reader import CacheError
from sriovop.runtime.controller import Controller, Request, Result
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from sriovop.runtime.manager import Manager
from sriovop.runtime.objects import thaw
from test.support.poll import wait_for
from test.support.runtime_live import client_for, configmap, new_namespace


def test_handlers_see_create_update_delete_in_order(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    inf = SharedIndexInformer(client, CONFIG_MAP, namespace=namespace)
    events: list[tuple[str, str, str]] = []
    lock = threading.Lock()

    def rec(kind: str, o: Any) -> None:
        with lock:
            events.append((kind, o["metadata"]["name"], str((o.get("data") or {}).get("v", ""))))

    inf.add_event_handler(FuncHandler(add=lambda o, _i: rec("add", o), update=lambda _old, new: rec("update", new),
                                      delete=lambda o: rec("delete", o)))
    stop = threading.Event()
    inf.start(stop)
    try:
        assert inf.wait_for_cache_sync(30)
        expected = []
        for i in range(5):
            name = f"cm-{i}"
            client.create(CONFIG_MAP, configmap(name, v="0"), namespace)
            expected.append(("add", name, "0"))
            for v in ("1", "2"):
                client.patch(CONFIG_MAP, name, {"data": {"v": v}}, namespace)
                expected.append(("update", name, v))
            client.delete(CONFIG_MAP, name, namespace)
            expected.append(("delete", name, "2"))
        wait_for(lambda: len(events) >= len(expected), what="all events delivered")
        assert events == expected
        assert len(inf.store) == 0
    finally:
        stop.set()
        inf.stop()


def test_namespaced_cache_never_sees_other_namespaces(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    other = new_namespace(client, "rt-other")
    for i in range(3):
        client.create(CONFIG_MAP, configmap(f"mine-{i}"), namespace)
        client.create(CONFIG_MAP, configmap(f"theirs-{i}"), other)
    mgr = Manager(client, name="scoped", namespaces={namespace})
    seen: list[str] = []
    for inf in mgr.cache.informers_for(CONFIG_MAP):
        inf.add_event_handler(FuncHandler(add=lambda o, _i: seen.append(o["metadata"]["namespace"]),
                                          update=lambda _o, n: seen.append(n["metadata"]["namespace"])))
    stop = threading.Event()
    t = threading.Thread(target=mgr.start, args=(stop,))
    t.start()
    try:
        wait_for(mgr.cache.has_synced, what="cache sync")
        client.create(CONFIG_MAP, configmap("theirs-late"), other)
        client.create(CONFIG_MAP, configmap("mine-late"), namespace)
        wait_for(lambda: any(o["metadata"]["name"] == "mine-late" for o in mgr.client.list(CONFIG_MAP)),
                   what="mine-late cached")
        names = {o["metadata"]["name"] for o in mgr.client.list(CONFIG_MAP)}
        assert names == {"mine-0", "mine-1", "mine-2", "mine-late"}
        assert set(seen) == {namespace}
        with pytest.raises(CacheError, match="outside this cache's scope"):
            mgr.client.get(CONFIG_MAP, "theirs-0", other)
        with pytest.raises(CacheError):
            mgr.client.list(CONFIG_MAP, other)
        for inf in mgr.cache.all_informers():
            assert all(o["metadata"]["namespace"] == namespace for o in inf.store.list())
    finally:
        stop.set()
        t.join(30)


def test_field_index_queries_return_exactly_the_matching_objects(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    other = new_namespace(client, "rt-idx")
    targets = ["red", "green", "blue"]
    for ns in (namespace, other):
        for i in range(12):
            labels = {"tier": "a" if i % 2 else "b"}
            body = {"metadata": {"name": f"o-{i}", "labels": labels}, "data": {"target": targets[i % 3]}}
            if i == 11:
                body["data"] = {}  # no value: must never match
            client.create(CONFIG_MAP, body, ns)
    mgr = Manager(client, name="indexed", namespaces={namespace, other})
    mgr.index_field(CONFIG_MAP, "data.target", lambda o: (o.get("data") or {}).get("target"))
    mgr.cache.informers_for(CONFIG_MAP)
    stop = threading.Event()
    t = threading.Thread(target=mgr.start, args=(stop,))
    t.start()
    try:
        wait_for(mgr.cache.has_synced, what="cache sync")
        everything = client.list(CONFIG_MAP, namespace) + client.list(CONFIG_MAP, other)

        def expect(ns: str | None, target: str, tier: str | None = None) -> set[tuple[str, str]]:
            return {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in everything
                    if (o.get("data") or {}).get("target") == target
                    and (ns is None or o["metadata"]["namespace"] == ns)
                    and (tier is None or o["metadata"]["labels"].get("tier") == tier)}

        def got(objs: list[Any]) -> set[tuple[str, str]]:
            return {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs}

        for target in [*targets, "none"]:
            assert got(mgr.client.list(CONFIG_MAP, field_selector={"data.target": target})) == expect(None, target)
            for ns in (namespace, other):
                assert got(mgr.client.list(CONFIG_MAP, ns, field_selector=f"data.target={target}")) == \
                    expect(ns, target)
            assert got(mgr.client.list(CONFIG_MAP, label_selector={"tier": "a"},
                                       field_selector={"data.target": target})) == expect(None, target, "a")
        # the index follows updates: move one object to another target
        client.patch(CONFIG_MAP, "o-0", {"data": {"target": "blue"}}, namespace)
        blue = {"data.target": "blue"}
        wait_for(lambda: (namespace, "o-0") in got(mgr.client.list(CONFIG_MAP, field_selector=blue)),
                   what="index update")
        assert (namespace, "o-0") not in got(mgr.client.list(CONFIG_MAP, field_selector={"data.target": "red"}))
        with pytest.raises(CacheError, match="no index"):
            mgr.client.list(CONFIG_MAP, field_selector={"data.other": "x"})
    finally:
        stop.set()
        t.join(30)


def test_uncached_read_sees_a_write_before_the_informer(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    mgr = Manager(client, name="fresh", namespaces={namespace})
    fresh = Manager(client, name="fresh2", namespaces={namespace}, disable_cache_for=[CONFIG_MAP])
    infs = mgr.cache.informers_for(CONFIG_MAP)
    stop = threading.Event()
    t = threading.Thread(target=mgr.start, args=(stop,))
    t.start()
    try:
        wait_for(mgr.cache.has_synced, what="cache sync")
        inf = infs[0]
        with inf._lock:  # hold the informer's apply step: the watch event cannot reach the cache
            created = client.create(CONFIG_MAP, configmap("fresh", v="1"), namespace)
            assert mgr.api_reader.get(CONFIG_MAP, "fresh", namespace)["metadata"]["resourceVersion"] == \
                created["metadata"]["resourceVersion"]
            assert fresh.client.get(CONFIG_MAP, "fresh", namespace)["data"] == {"v": "1"}
            with pytest.raises(NotFound):
                mgr.client.get(CONFIG_MAP, "fresh", namespace)
        wait_for(lambda: _cached(mgr, "fresh", namespace), what="informer catches up")
        cached = mgr.client.get(CONFIG_MAP, "fresh", namespace)
        with pytest.raises(TypeError, match="read-only"):
            cached["data"]["v"] = "2"
        mine = thaw(cached)
        mine["data"]["v"] = "2"
        assert client.update(CONFIG_MAP, mine)["data"]["v"] == "2"
    finally:
        stop.set()
        t.join(30)


def _cached(mgr: Manager, name: str, ns: str) -> bool:
    try:
        mgr.client.get(CONFIG_MAP, name, ns)
        return True
    except NotFound:
        return False


def test_controller_reconciles_retries_and_exposes_metrics_two_managers(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    attempts: dict[str, int] = {}
    done = threading.Event()

    def reconcile(req: Request) -> Result | None:
        attempts[req.name] = attempts.get(req.name, 0) + 1
        if req.name == "flaky" and attempts[req.name] < 3:
            raise RuntimeError("transient")
        try:
            cm = mgr.client.get(CONFIG_MAP, req.name, req.namespace)
        except NotFound:
            return None
        if "copied" not in (cm.get("data") or {}):
            client.patch(CONFIG_MAP, req.name, {"data": {"copied": "yes"}}, req.namespace)
        if req.name == "later" and attempts[req.name] == 1:
            return Result(requeue_after=0.2)
        if req.name == "flaky":
            done.set()
        return None

    mgr = Manager(client, name="ops", namespaces={namespace}, metrics_bind_address="127.0.0.1:0",
                  health_probe_bind_address="127.0.0.1:0")
    cluster = Manager(client, name="cluster")  # no endpoints: runs beside the first without clashes
    ctrl = Controller(f"cms-{namespace}", reconcile, workers=2).watches(mgr.cache.informers_for(CONFIG_MAP))
    mgr.add(ctrl)
    cluster.cache.informers_for(NODE)
    stops = [threading.Event(), threading.Event()]
    threads = [threading.Thread(target=m.start, args=(s,)) for m, s in ((mgr, stops[0]), (cluster, stops[1]))]
    for th in threads:
        th.start()
    try:
        for name in ("a", "flaky", "later"):
            client.create(CONFIG_MAP, configmap(name), namespace)
        wait_for(done.is_set, what="flaky reconciled after retries")
        wait_for(lambda: all("copied" in (o.get("data") or {}) for o in client.list(CONFIG_MAP, namespace)),
                   what="all copied")
        wait_for(lambda: attempts.get("later", 0) >= 2, what="requeue_after honoured")
        assert attempts["flaky"] >= 3
        assert ctrl.queue.num_requeues(Request(namespace, "flaky")) == 0  # forgotten after success
        body = urllib.request.urlopen(f"http://127.0.0.1:{mgr.metrics_port}/metrics", timeout=5).read().decode()
        label = f'controller="cms-{namespace}"'
        assert f'controller_runtime_reconcile_errors_total{{{label}}}' in body
        errors_line = next(line for line in body.splitlines()
                           if line.startswith(f"controller_runtime_reconcile_errors_total{{{label}}}"))
        assert float(errors_line.split()[-1]) >= 2
        assert f'controller_runtime_reconcile_total{{{label},result="success"}}' in body
        assert f'controller_runtime_reconcile_total{{{label},result="requeue_after"}}' in body
        assert "controller_runtime_reconcile_time_seconds_bucket" in body
        assert "workqueue_adds_total" in body
        for path in ("healthz", "readyz"):
            resp = urllib.request.urlopen(f"http://127.0.0.1:{mgr.probe_port}/{path}", timeout=5)
            assert resp.status == 200
        assert cluster.metrics_port is None and cluster.probe_port is None
        assert mgr.elected.is_set()
    finally:
        for s in stops:
            s.set()
        for th in threads:
            th.join(30)
    assert not any(th.is_alive() for th in threads)


def test_a_one_item_page_counts_the_whole_collection(kubeconfig: Path, namespace: str) -> None:
    """The webhook's freshness barrier counts a kind with one consistent `limit=1` LIST; the real
    kube-apiserver must say how many items follow the page (`remainingItemCount`) or it falls back."""
    client = client_for(kubeconfig)
    assert client.list_page(CONFIG_MAP, namespace, limit=1).total() == len(client.list(CONFIG_MAP, namespace))
    for i in range(4):
        client.create(CONFIG_MAP, {**configmap(f"counted-{i}"), "metadata": {"name": f"counted-{i}",
                                                                              "labels": {"counted": "yes"}}},
                      namespace)
    everything = client.list(CONFIG_MAP, namespace)
    page = client.list_page(CONFIG_MAP, namespace, limit=1)
    assert page.continue_ and page.remaining_item_count is not None
    assert page.total() == len(everything) >= 4
    client.delete(CONFIG_MAP, "counted-0", namespace)
    assert client.list_page(CONFIG_MAP, namespace, limit=1).total() == len(everything) - 1
    # With a selector the server does not count: the page says so instead of guessing.
    selected = client.list_page(CONFIG_MAP, namespace, label_selector={"counted": "yes"}, limit=1)
    assert len(selected.items) == 1 and selected.continue_ and selected.total() is None
