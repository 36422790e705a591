"""The Events recorder against the real kube-apiserver."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.events import COMBINED_PREFIX, EVENTS_DROPPED, EventRecorder
from sriovop.runtime.kinds import CONFIG_MAP, EVENT, NAMESPACE, Kind


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[Client]:
    c = Client(load_config(str(kubeconfig)))
    yield c
    c.close()


@pytest.fixture
def config_map(client: Client, namespace: str) -> dict[str, Any]:
    return client.create(CONFIG_MAP, {"metadata": {"name": "subject", "namespace": namespace}},
                         namespace=namespace)


def _events_for(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENT, namespace) if e["involvedObject"]["name"] == name]


def test_event_is_written_with_reference_and_source(client: Client, namespace: str,
                                                     config_map: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "sriovop-test", host="host-a")
    try:
        recorder.event(config_map, "Normal", "Configured", "all good")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    [event] = _events_for(client, namespace, "subject")
    assert event["type"] == "Normal"
    assert event["reason"] == "Configured"
    assert event["message"] == "all good"
    assert event["count"] == 1
    assert event["source"] == {"component": "sriovop-test", "host": "host-a"}
    involved = event["involvedObject"]
    assert involved["kind"] == "ConfigMap" and involved["apiVersion"] == "v1"
    assert involved["namespace"] == namespace
    assert involved["uid"] == config_map["metadata"]["uid"]
    assert event["metadata"]["name"].startswith("subject.")


def test_repeats_are_counted_on_one_event(client: Client, namespace: str,
                                          config_map: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "sriovop-test")
    try:
        recorder.event(config_map, "Warning", "SyncFailed", "boom")
        assert recorder.flush(30)
        first = _events_for(client, namespace, "subject")[0]
        time.sleep(1.1)  # so lastTimestamp (second resolution) can move
        recorder.event(config_map, "Warning", "SyncFailed", "boom")
        recorder.event(config_map, "Warning", "SyncFailed", "boom")
        recorder.event(config_map, "Warning", "SyncFailed", "different")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    events = _events_for(client, namespace, "subject")
    by_message = {e["message"]: e for e in events}
    assert set(by_message) == {"boom", "different"}
    assert by_message["boom"]["count"] == 3
    assert by_message["boom"]["metadata"]["name"] == first["metadata"]["name"]
    assert by_message["boom"]["firstTimestamp"] == first["firstTimestamp"]
    assert by_message["boom"]["lastTimestamp"] > first["lastTimestamp"]
    assert by_message["different"]["count"] == 1


def test_rate_limit_is_per_object_and_reason(client: Client, namespace: str,
                                             config_map: dict[str, Any]) -> None:
    other = client.create(CONFIG_MAP, {"metadata": {"name": "other", "namespace": namespace}},
                          namespace=namespace)
    limited_before = EVENTS_DROPPED.labels("rate_limited")._value.get()
    recorder = EventRecorder(client, "sriovop-test", spam_burst=3, spam_qps=1e-6)
    try:
        for i in range(10):
            recorder.event(config_map, "Normal", "Hot", f"hot {i}")
        recorder.event(config_map, "Normal", "Cold", "a different reason has its own budget")
        recorder.event(other, "Normal", "Hot", "a different object has its own budget")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    hot = [e for e in _events_for(client, namespace, "subject") if e["reason"] == "Hot"]
    assert sorted(e["message"] for e in hot) == ["hot 0", "hot 1", "hot 2"]
    assert [e["reason"] for e in _events_for(client, namespace, "subject") if e["reason"] != "Hot"] == ["Cold"]
    assert [e["reason"] for e in _events_for(client, namespace, "other")] == ["Hot"]
    assert EVENTS_DROPPED.labels("rate_limited")._value.get() - limited_before == 7


def test_similar_events_are_aggregated(client: Client, namespace: str, config_map: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "sriovop-test", aggregate_max=3)
    try:
        for i in range(6):
            recorder.event(config_map, "Warning", "Flapping", f"attempt {i}")
        recorder.event(config_map, "Warning", "Flapping", "attempt 0")  # a repeat, but now combined too
        recorder.event(config_map, "Normal", "Flapping", "other type: not combined")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    events = _events_for(client, namespace, "subject")
    plain = sorted(e["message"] for e in events if not e["message"].startswith(COMBINED_PREFIX))
    combined = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
    assert plain == ["attempt 0", "attempt 1", "other type: not combined"]
    [one] = combined  # from the 3rd distinct message on, one Event counts them all
    assert one["count"] == 5
    assert one["message"] == COMBINED_PREFIX + "attempt 0"
    assert one["type"] == "Warning"


def test_cluster_scoped_object_events_go_to_default(client: Client, namespace: str) -> None:
    ns_obj = client.get(NAMESPACE, namespace)
    uid = ns_obj["metadata"]["uid"]
    recorder = EventRecorder(client, "sriovop-test")
    try:
        recorder.event(ns_obj, "Normal", "Seen", "cluster-scoped subject")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    # `default` is shared by the whole session (every cluster-scoped subject's Events land there, and
    # not every writer's Event names its object): select ours on the server by the Namespace's uid.
    events = client.list(EVENT, "default", field_selector={"involvedObject.uid": uid})
    assert [(e["reason"], e["involvedObject"].get("name")) for e in events] == [("Seen", namespace)], events
    assert "namespace" not in events[0]["involvedObject"]


class _BlockingClient:
    """Wraps the real client; writes wait until released (a slow or hung API server)."""

    def __init__(self, inner: Client) -> None:
        self.inner = inner
        self.release = threading.Event()

    def create(self, kind: Kind, obj: Mapping[str, Any], namespace: str | None = None) -> Any:
        self.release.wait()
        return self.inner.create(kind, obj, namespace)

    def patch(self, kind: Kind, name: str, patch: Any, namespace: str | None = None) -> Any:
        self.release.wait()
        return self.inner.patch(kind, name, patch, namespace)


def test_event_never_blocks_the_caller(client: Client, namespace: str, config_map: dict[str, Any]) -> None:
    blocking = _BlockingClient(client)
    full_before = EVENTS_DROPPED.labels("queue_full")._value.get()
    recorder = EventRecorder(blocking, "sriovop-test", queue_size=5)
    try:
        done = threading.Event()

        def record() -> None:
            for i in range(50):
                recorder.event(config_map, "Normal", f"Reason{i}", "m")
            done.set()

        threading.Thread(target=record, daemon=True).start()
        assert done.wait(10), "event() blocked while the API server was not answering"
        # One event is with the blocked writer, five are queued; the rest were dropped.
        assert EVENTS_DROPPED.labels("queue_full")._value.get() - full_before >= 44
        blocking.release.set()
        assert recorder.flush(30)
    finally:
        blocking.release.set()
        recorder.stop()
    assert 5 <= len(_events_for(client, namespace, "subject")) <= 6


def test_bad_input_names_the_field(client: Client, config_map: dict[str, Any]) -> None:
    recorder = EventRecorder(client, "sriovop-test")
    try:
        with pytest.raises(ValueError, match="event type"):
            recorder.event(config_map, "Info", "R", "m")
        with pytest.raises(ValueError, match="reason"):
            recorder.event(config_map, "Normal", "", "m")
        with pytest.raises(ValueError, match=r"metadata\.name"):
            recorder.event({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {}}, "Normal", "R", "m")
        with pytest.raises(ValueError, match="component"):
            EventRecorder(client, "")
    finally:
        recorder.stop()
