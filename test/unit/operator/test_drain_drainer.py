"""The Drainer's retry, timeout, blocker reporting and stop behaviour, over a plain in-memory fake."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sriovop.controllers.drain.drainer import Blocker, Drainer, DrainFailed, DrainStopped
from sriovop.runtime.errors import TooManyRequests
from sriovop.runtime.kinds import NODE, POD, Kind


class FakeCluster:
    """One node; pods disappear when evicted unless their name is in `protected`."""

    def __init__(self, pods: list[str], protected: set[str]) -> None:
        self.node: dict[str, Any] = {"metadata": {"name": "n1"}, "spec": {}}
        self.pods = {p: {"metadata": {"name": p, "namespace": "ns", "uid": f"uid-{p}"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"openshift.io/vf": "1"}}}]}} for p in pods}
        self.protected = protected
        self.evictions: list[str] = []
        self.patches: list[Any] = []

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        assert kind == NODE
        return self.node

    def patch(self, kind: Kind, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> None:
        self.patches.append(patch)
        self.node["spec"]["unschedulable"] = patch["spec"]["unschedulable"]

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Any = None,
             field_selector: Any = None) -> list[dict[str, Any]]:
        assert kind == POD and field_selector == {"spec.nodeName": "n1"}
        return list(self.pods.values())

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> None:
        name = body["metadata"]["name"]
        self.evictions.append(name)
        if name in self.protected:
            raise TooManyRequests(429, "Cannot evict pod as it would violate the pod's disruption budget.",
                                  {"message": "Cannot evict pod as it would violate the pod's disruption budget.",
                                   "details": {"causes": [{"reason": "DisruptionBudget",
                                                           "message": "The disruption budget pdb needs 1"}]}})
        self.pods.pop(name, None)


def drainer(cluster: FakeCluster, **kw: Any) -> Drainer:
    opts = {"timeout": 0.3, "attempts": 2, "retry_delay": 0.01, "eviction_retry_interval": 0.05,
            "poll_interval": 0.01, **kw}
    return Drainer(cluster, "openshift.io", **opts)  # type: ignore[arg-type]


def test_drain_cordons_and_evicts() -> None:
    cluster = FakeCluster(["a", "b"], set())
    drainer(cluster).drain("n1", full=False)
    assert cluster.node["spec"]["unschedulable"] is True
    assert cluster.pods == {} and sorted(cluster.evictions) == ["a", "b"]


def test_blocked_eviction_is_reported_once_and_fails_after_every_attempt() -> None:
    cluster = FakeCluster(["a", "guarded"], {"guarded"})
    seen: list[tuple[str, Blocker]] = []
    with pytest.raises(DrainFailed, match="after 2 attempts") as info:
        drainer(cluster).drain("n1", full=False, on_blocked=lambda node, b: seen.append((node, b)))
    assert info.value.blocker is not None and info.value.blocker.pod == "ns/guarded"
    assert "disruption budget" in info.value.blocker.reason and "pdb needs 1" in info.value.blocker.reason
    # Reported as soon as refused, once per attempt (not once per retry of the eviction).
    assert [n for n, _ in seen] == ["n1", "n1"] and all(b.pod == "ns/guarded" for _, b in seen)
    assert cluster.evictions.count("guarded") > 2
    assert "a" not in cluster.pods
    assert cluster.node["spec"]["unschedulable"] is True  # stays cordoned


def test_a_budget_that_frees_up_lets_the_same_attempt_finish() -> None:
    cluster = FakeCluster(["guarded"], {"guarded"})
    threading.Timer(0.1, cluster.protected.clear).start()
    drainer(cluster, timeout=5.0).drain("n1", full=False)
    assert cluster.pods == {}


def test_stop_abandons_a_drain_promptly() -> None:
    cluster = FakeCluster(["guarded"], {"guarded"})
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(DrainStopped):
        drainer(cluster, timeout=30.0, stop=stop).drain("n1", full=False)


def test_uncordon_only_writes_when_needed() -> None:
    cluster = FakeCluster([], set())
    d = drainer(cluster)
    d.uncordon("n1")
    assert cluster.patches == []
    d.cordon("n1")
    d.uncordon("n1")
    assert cluster.patches == [{"spec": {"unschedulable": True}}, {"spec": {"unschedulable": None}}]


def test_empty_resource_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="resource_prefix is empty"):
        Drainer(FakeCluster([], set()), "")  # type: ignore[arg-type]
