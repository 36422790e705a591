"""The hollow daemons' shared watches (sriovop.hollow.fanout): what each daemon's reflector is served.

Host: none (the hub's sink is fed directly, as its reflector would feed it, and watch event lines are
built in kube-apiserver's format; no API server).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from kubernetes import client as k8s_client

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.hollow import fanout
from sriovop.hollow.fanout import HISTORY, FanoutClient, Hub, NameFilter, _one_equality
from sriovop.runtime.cache.reflector import Reflector
from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.errors import ConnectionFailed, Gone
from sriovop.runtime.kinds import POD
from test.support.poll import wait_for
from test.support.watch_lines import watch_line

NAME = ("metadata", "name")


def state(name: str, rv: int, num_vfs: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}, "spec": {"numVfs": num_vfs}}


def hub(names: list[str] | None = None) -> Hub:
    cfg = k8s_client.Configuration()
    cfg.host = "https://127.0.0.1:1"
    return Hub(Client(RestConfig(configuration=cfg)), SRIOV_NETWORK_NODE_STATE, "ns", None, names)


@pytest.fixture
def following(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Reflector, "following", property(lambda self: True))


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


def test_watch_gets_only_its_objects_events_after_its_resource_version(following: None) -> None:
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


def test_a_relist_publishes_what_changed(following: None) -> None:
    h = hub()
    h.replace([state("a", 5)], "5")
    stream = h.watch(NAME, "a", "5", timeout_seconds=30)
    h.replace([state("a", 8, 2)], "8")
    h.replace([], "9")
    assert [t for t, _ in drain(stream, 2)] == ["MODIFIED", "DELETED"]


def test_resuming_from_before_the_history_is_gone(following: None) -> None:
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


def test_a_stream_breaks_when_the_hubs_own_watch_stops_following(monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon's stream breaks (ConnectionFailed, as when the API server goes away) at the hub's next
    check after its own watch stops following the server, after the events it had; the check runs on
    the hub's own thread (`check_following`), the streams do not wake to look."""
    monkeypatch.setattr(fanout, "BREAK_CHECK", 0.05)
    up = {"following": True}
    monkeypatch.setattr(Reflector, "following", property(lambda self: up["following"]))
    h = hub()
    h.replace([state("a", 5)], "5")
    stream = h.watch(NAME, "a", "5", timeout_seconds=600)
    got: list[tuple[str, Any]] = []
    broke: list[ConnectionFailed] = []

    def read() -> None:
        try:
            got.extend(stream)
        except ConnectionFailed as exc:
            broke.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    stop = threading.Event()
    checker = threading.Thread(target=h.check_following, args=(stop,))
    checker.start()
    try:
        h.update(state("a", 6, 2))
        wait_for(lambda: len(got) == 1, 30, "the event before the break")
        assert h.break_streams_if_down() == 0 and reader.is_alive()  # following: nothing broken
        up["following"] = False
        reader.join(timeout=60)
        assert not reader.is_alive()
        assert [t for t, _ in got] == ["MODIFIED"]
        assert len(broke) == 1 and "shared watch broke" in str(broke[0])
        with pytest.raises(ConnectionFailed):  # and no new stream until the hub follows again
            h.watch(NAME, "a", "6", timeout_seconds=600)
        up["following"] = True
        h.watch(NAME, "a", "6", timeout_seconds=600).close()
    finally:
        stop.set()
        checker.join(timeout=30)
        h.stop()


def test_a_quiet_stream_ends_at_its_timeout(following: None) -> None:
    h = hub()
    h.replace([state("a", 5)], "5")
    assert list(h.watch(NAME, "a", "5", timeout_seconds=1)) == []  # a normal end, as the server's


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


def event_line(etype: str, name: str, rv: int, *, interface: str = "p0", facts: str = "") -> bytes:
    """A NodeState's watch event with the other "name" keys a NodeState carries and an annotation
    holding JSON."""
    obj = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
           "metadata": {"annotations": {"sriovop.io/host-facts": facts}, "generation": 2,
                        "managedFields": [{"fieldsV1": {"f:metadata": {"f:name": {}}}, "manager": "operator"}],
                        "name": name, "namespace": "ns",
                        "ownerReferences": [{"kind": "SriovOperatorConfig", "name": "default", "uid": "u"}],
                        "resourceVersion": str(rv), "uid": f"uid-{name}"},
           "spec": {"interfaces": [{"name": interface, "numVfs": 4}]},
           "status": {"interfaces": [{"name": interface, "Vfs": [{"name": f"{interface}v0"}]}]}}
    return watch_line(etype, obj)


def test_a_name_filter_decodes_only_the_events_of_its_names() -> None:
    f = NameFilter(["a", "b"])
    mine = event_line("MODIFIED", "a", 10)
    assert f(mine) == json.loads(mine)
    # another process's object: only its resourceVersion, which the hub's own watch resumes from
    assert f(event_line("MODIFIED", "c", 11)) == {"type": "MODIFIED", "object": {"metadata": {"resourceVersion": "11"}}}
    assert f(event_line("DELETED", "c", 12))["type"] == "DELETED"
    # JSON inside an annotation is a string: its escaped quotes do not count as a "name" key
    facts = json.dumps({"interfaces": [{"name": "a"}], "resourceVersion": "1"})
    assert "metadata" in f(event_line("ADDED", "c", 13, facts=facts))["object"]
    assert f.skipped == 3


@pytest.mark.parametrize("line", [
    event_line("MODIFIED", "c", 11, interface="a"),  # a "name" key equal to a served name: decoded
    b'{"type":"BOOKMARK","object":{"kind":"SriovNetworkNodeState","metadata":{"resourceVersion":"14"}}}',
    b'{"type":"ERROR","object":{"code":410,"kind":"Status","message":"too old"}}',
    b'{"object":{"metadata":{"name":"c","resourceVersion":"15"}},"type":"MODIFIED"}',  # another shape
    b'{"type":"MODIFIED","object":{"metadata":{"name":"c","resourceVersion":"15"},"x":{"resourceVersion":"1"}}}',
])
def test_a_name_filter_decodes_whatever_it_cannot_tell_apart(line: bytes) -> None:
    f = NameFilter(["a"])
    assert f(line) == json.loads(line)
    assert f.skipped == 0


def test_a_hub_for_some_names_keeps_and_publishes_only_those(following: None) -> None:
    h = hub(names=["a"])
    assert h.name_filter is not None
    h.replace([state("a", 5), state("c", 6)], "6")
    stream = h.watch(NAME, "a", "6", timeout_seconds=30)
    h.update(h.name_filter(event_line("MODIFIED", "c", 7))["object"])  # a stub
    h.update(json.loads(event_line("MODIFIED", "c", 8, interface="a"))["object"])  # decoded, not served
    h.update(state("a", 9, 2))
    assert [(t, o["metadata"]["resourceVersion"]) for t, o in drain(stream, 1)] == [("MODIFIED", "9")]
    assert h.list(NAME, "a", "9").resource_version == "9"
    h.update(h.name_filter(event_line("MODIFIED", "c", 10))["object"])
    assert h.list(NAME, "a", "10").resource_version == "10"  # the stubs' versions count: no list waits on them
    assert sorted(h._objects) == ["ns/a"]
    stream.close()


def test_a_name_the_process_did_not_declare_is_read_from_the_server() -> None:
    cfg = k8s_client.Configuration()
    cfg.host = "https://127.0.0.1:1"
    c = FanoutClient(RestConfig(configuration=cfg, connect_timeout=0.5),
                     names={SRIOV_NETWORK_NODE_STATE.plural: ["a"]})
    with pytest.raises(ConnectionFailed):  # a cache read, but of an undeclared name: sent to port 1
        c.list_page(SRIOV_NETWORK_NODE_STATE, "ns", field_selector={"metadata.name": "z"}, resource_version="0")
    assert c.hubs() == 0
    assert c._answers(SRIOV_NETWORK_NODE_STATE, {"metadata.name": "a"}) == (NAME, "a")
    assert c._answers(SRIOV_NETWORK_NODE_STATE, {"spec.nodeName": "a"}) is None  # the hub holds only "a"
    assert c._answers(POD, {"spec.nodeName": "z"}) == (("spec", "nodeName"), "z")
    c.close()
