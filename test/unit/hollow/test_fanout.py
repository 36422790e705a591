"""The hollow daemons' shared watches (sriovop.hollow.fanout): what each daemon's reflector is served.

Host: none (the hub's sink is fed directly, as its reflector would feed it; no API server).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client as k8s_client

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.hollow.fanout import HISTORY, FanoutClient, Hub, _one_equality
from sriovop.runtime.cache.reflector import Reflector
from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.errors import ConnectionFailed, Gone

NAME = ("metadata", "name")


def state(name: str, rv: int, num_vfs: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}, "spec": {"numVfs": num_vfs}}


def hub() -> Hub:
    cfg = k8s_client.Configuration()
    cfg.host = "https://127.0.0.1:1"
    return Hub(Client(RestConfig(configuration=cfg)), SRIOV_NETWORK_NODE_STATE, "ns", None)


@pytest.fixture
def watching(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Reflector, "watching", property(lambda self: True))


def drain(stream: Any, n: int) -> list[tuple[str, Any]]:
    out = []
    for item in stream:
        out.append(item)
        if len(out) == n:
            break
    return out


def test_list_is_the_matching_objects_at_the_hubs_resource_version() -> None:
    h = hub()
    h.replace([state("a", 5), state("b", 7)], "9")
    page = h.list(NAME, "b", "0")
    assert [o["metadata"]["name"] for o in page.items] == ["b"]
    assert page.resource_version == "9"
    page.items[0]["spec"]["numVfs"] = 99  # the caller's copy, not the hub's
    assert h.list(NAME, "b", "0").items[0]["spec"]["numVfs"] == 1


def test_watch_gets_only_its_objects_events_after_its_resource_version(watching: None) -> None:
    h = hub()
    h.replace([state("a", 5), state("b", 7)], "9")
    h.update(state("a", 10, 2))  # before the watch, after its RV: replayed
    stream = h.watch(NAME, "a", "9", timeout_seconds=30)
    h.update(state("b", 11, 3))
    h.update(state("a", 12, 4))
    h.delete(state("a", 13, 4))
    events = drain(stream, 3)
    assert [(t, o["metadata"]["resourceVersion"]) for t, o in events] == [
        ("MODIFIED", "10"), ("MODIFIED", "12"), ("DELETED", "13")]
    stream.close()


def test_a_relist_publishes_what_changed(watching: None) -> None:
    h = hub()
    h.replace([state("a", 5)], "5")
    stream = h.watch(NAME, "a", "5", timeout_seconds=30)
    h.replace([state("a", 8, 2)], "8")
    h.replace([], "9")
    assert [t for t, _ in drain(stream, 2)] == ["MODIFIED", "DELETED"]


def test_resuming_from_before_the_history_is_gone(watching: None) -> None:
    h = hub()
    h.replace([], "1")
    for rv in range(2, HISTORY + 3):
        h.update(state("a", rv))
    with pytest.raises(Gone):
        h.watch(NAME, "a", "1", timeout_seconds=30)
    h.watch(NAME, "a", str(HISTORY + 2), timeout_seconds=30).close()


def test_no_watch_while_the_hubs_own_watch_is_down() -> None:
    h = hub()
    h.replace([], "1")
    with pytest.raises(ConnectionFailed):
        h.watch(NAME, "a", "1", timeout_seconds=30)


def test_a_list_waits_for_the_resource_version_it_asks_for() -> None:
    h = hub()
    h.replace([state("a", 5)], "5")
    threading.Timer(0.2, lambda: h.update(state("a", 6, 2))).start()
    page = h.list(NAME, "a", "6")
    assert page.items[0]["spec"]["numVfs"] == 2


@pytest.mark.parametrize(("selector", "expected"), [
    ({"metadata.name": "n1"}, (NAME, "n1")),
    ("spec.nodeName=n2", (("spec", "nodeName"), "n2")),
    ("metadata.name=n1,spec.nodeName=n2", None),
    ("metadata.name!=n1", None),
    ({"metadata.namespace": "x"}, None),
    (None, None),
])
def test_which_selectors_a_hub_answers(selector: Any, expected: Any) -> None:
    assert _one_equality(selector) == expected


def test_live_reads_go_to_the_server() -> None:
    cfg = k8s_client.Configuration()
    cfg.host = "https://127.0.0.1:1"
    c = FanoutClient(RestConfig(configuration=cfg, connect_timeout=0.5))
    with pytest.raises(ConnectionFailed):  # no resourceVersion: a live list, sent to (nothing at) port 1
        c.list_page(SRIOV_NETWORK_NODE_STATE, "ns", field_selector={"metadata.name": "a"})
    assert c.hubs() == 0
    c.close()
