"""The reflector survives an apiserver restart, a compacted-away watch (410) and a frozen apiserver.

These tests stop or restart kube-apiserver, so they run on a private control plane.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from sriovop.devcluster import ControlPlane
from sriovop.runtime.cache import SharedIndexInformer
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError
from sriovop.runtime.kinds import CONFIG_MAP
from test.support.poll import wait_for
from test.support.runtime_live import cache_rvs, client_for, configmap, new_namespace, server_rvs


@pytest.fixture(scope="module")
def private_cp() -> Iterator[ControlPlane]:
    cp = ControlPlane().start()
    try:
        yield cp
    finally:
        cp.stop()


def _writer(client: Client, ns: str, stop: threading.Event, counts: dict[str, int]) -> None:
    rnd = random.Random(7)
    names = [f"w-{i}" for i in range(40)]
    while not stop.is_set():
        name = rnd.choice(names)
        op = rnd.random()
        try:
            if op < 0.5:
                client.create(CONFIG_MAP, configmap(name, v=str(rnd.random())), ns)
            elif op < 0.85:
                client.patch(CONFIG_MAP, name, {"data": {"v": str(rnd.random())}}, ns)
            else:
                client.delete(CONFIG_MAP, name, ns)
            counts["ok"] = counts.get("ok", 0) + 1
        except ApiError:
            counts["failed"] = counts.get("failed", 0) + 1  # conflicts, not-founds, apiserver down
            time.sleep(0.01)


def _converged(client: Client, inf: SharedIndexInformer, ns: str) -> bool:
    try:
        return server_rvs(client, ns) == cache_rvs(inf.store.list())
    except ApiError:
        return False


def test_apiserver_restart_during_write_stream_converges_exactly(private_cp: ControlPlane) -> None:
    client = client_for(private_cp.kubeconfig, read_timeout=10.0, watch_read_timeout=10.0)
    ns = new_namespace(client)
    inf = SharedIndexInformer(client, CONFIG_MAP, namespace=ns)
    stop, wstop = threading.Event(), threading.Event()
    inf.start(stop)
    counts: dict[str, int] = {}
    writer = threading.Thread(target=_writer, args=(client, ns, wstop, counts))
    try:
        assert inf.wait_for_cache_sync(30)
        writer.start()
        wait_for(lambda: counts.get("ok", 0) > 100, what="writes before the restart")
        watches_before = inf.reflector.watches
        private_cp.restart_apiserver(downtime=1.0)
        ok_at_restart = counts.get("ok", 0)
        wait_for(lambda: counts.get("ok", 0) > ok_at_restart + 100, timeout=60, what="writes after restart")
        wstop.set()
        writer.join(10)
        wait_for(lambda: _converged(client, inf, ns), timeout=60, what="cache equals server state")
        assert server_rvs(client, ns) == cache_rvs(inf.store.list())
        assert inf.reflector.watches > watches_before  # it did lose and re-establish the watch
    finally:
        wstop.set()
        stop.set()
        inf.stop()


def _etcd(cp: ControlPlane, path: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(f"{cp.etcd_url}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def _etcd_revision(cp: ControlPlane) -> int:
    key = base64.b64encode(b"/registry").decode()
    out = _etcd(cp, "/v3/kv/range", {"key": key, "limit": 1})
    return int(out["header"]["revision"])  # type: ignore[index]


def test_watch_rv_compacted_away_relists_and_converges(private_cp: ControlPlane) -> None:
    client = client_for(private_cp.kubeconfig, read_timeout=10.0, watch_read_timeout=10.0)
    ns, elsewhere = new_namespace(client), new_namespace(client)
    for i in range(30):
        client.create(CONFIG_MAP, configmap(f"c-{i}", v="0"), ns)
    inf = SharedIndexInformer(client, CONFIG_MAP, namespace=ns)
    stop = threading.Event()
    inf.start(stop)
    try:
        assert inf.wait_for_cache_sync(30)
        lists_before = inf.reflector.lists
        watched_rv = int(inf.last_sync_resource_version)
        with inf._lock:  # the reflector blocks on the first event: its RV stays behind
            for i in range(30):
                if i % 3 == 0:
                    client.delete(CONFIG_MAP, f"c-{i}", ns)
                else:
                    client.patch(CONFIG_MAP, f"c-{i}", {"data": {"v": "1"}}, ns)
            for i in range(10):
                client.create(CONFIG_MAP, configmap(f"n-{i}"), ns)
            client.create(CONFIG_MAP, configmap("unwatched"), elsewhere)
            revision = _etcd_revision(private_cp)
            assert revision > watched_rv
            _etcd(private_cp, "/v3/kv/compaction", {"revision": str(revision), "physical": True})
            private_cp.restart_apiserver()
        wait_for(lambda: inf.reflector.lists > lists_before, timeout=90, what="a relist after 410")
        wait_for(lambda: _converged(client, inf, ns), timeout=60, what="cache equals server state")
        assert server_rvs(client, ns) == cache_rvs(inf.store.list())
        names = {o["metadata"]["name"] for o in inf.store.list()}
        assert "c-0" not in names and "n-9" in names and "unwatched" not in names
    finally:
        stop.set()
        inf.stop()


def test_frozen_apiserver_longer_than_read_timeout_watch_recovers(private_cp: ControlPlane) -> None:
    client = client_for(private_cp.kubeconfig, read_timeout=2.0, watch_read_timeout=2.0, connect_timeout=2.0)
    ns = new_namespace(client)
    inf = SharedIndexInformer(client, CONFIG_MAP, namespace=ns)
    stop = threading.Event()
    inf.start(stop)
    assert private_cp.apiserver is not None
    pid = private_cp.apiserver.pid
    try:
        assert inf.wait_for_cache_sync(30)
        client.create(CONFIG_MAP, configmap("before"), ns)
        wait_for(lambda: inf.store.get_by_key(f"{ns}/before") is not None, what="before cached")
        watches = inf.reflector.watches
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(6.0)  # three read timeouts' worth of silence
        finally:
            os.kill(pid, signal.SIGCONT)
        client.create(CONFIG_MAP, configmap("after"), ns)
        wait_for(lambda: inf.store.get_by_key(f"{ns}/after") is not None, timeout=60,
                   what="the watch recovers and delivers a new object")
        assert inf.reflector.watches > watches  # the stalled watch was abandoned, not waited on
        wait_for(lambda: _converged(client, inf, ns), timeout=30, what="converged")
    finally:
        stop.set()
        inf.stop()
