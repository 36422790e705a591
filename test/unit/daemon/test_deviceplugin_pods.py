"""The config daemon's device-plugin handling against a plain in-memory pod store (no API server)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.daemon.deviceplugin import (
    WAIT_ANNOTATION,
    DevicePluginPods,
    Restart,
    expects_mark,
    is_waiting,
    live,
    replacements,
    unblock_patch,
)
from sriovop.runtime.client import Selector
from sriovop.runtime.errors import Forbidden, NotFound
from sriovop.runtime.kinds import POD, Kind

NS, NODE = "ops", "n1"


def pod(uid: str, *, node: str = NODE, marked: bool = False, terminating: bool = False,
        init: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"dp-{uid}", "uid": uid, "namespace": NS,
                            "labels": {"app": "sriov-device-plugin"}}
    if marked:
        meta["annotations"] = {WAIT_ANNOTATION: "true"}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"nodeName": node}
    if init:
        spec["initContainers"] = [{"name": "device-plugin-init", "command": ["sriovop", "wait-for-config"]}]
    return {"metadata": meta, "spec": spec}


class Pods:
    """A pod store; `on_list` runs before each list (plays the DaemonSet controller / init container)."""

    def __init__(self, *pods: dict[str, Any]) -> None:
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.calls: list[tuple[str, ...]] = []
        self.on_list: list[Any] = []
        self.fail: dict[str, Exception] = {}

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
             field_selector: Selector = None) -> list[Any]:
        assert kind is POD and namespace == NS
        assert label_selector == {"app": "sriov-device-plugin"}
        assert field_selector == {"spec.nodeName": NODE}
        self.calls.append(("list",))
        if "list" in self.fail:
            raise self.fail["list"]
        if self.on_list:
            self.on_list.pop(0)(self)
        return [p for p in self.pods.values() if p["spec"]["nodeName"] == NODE]

    def delete(self, kind: Kind, name: str, namespace: str | None = None, *,
               preconditions: Mapping[str, str] | None = None) -> Any:
        self.calls.append(("delete", name))
        if "delete" in self.fail:
            raise self.fail["delete"]
        if name not in self.pods:
            raise NotFound(404, name)
        assert preconditions == {"uid": self.pods[name]["metadata"]["uid"]}
        self.pods[name]["metadata"]["deletionTimestamp"] = "now"
        return None

    def patch(self, kind: Kind, name: str, patch: Any, namespace: str | None = None) -> Any:
        self.calls.append(("patch", name))
        if name not in self.pods:
            raise NotFound(404, name)
        assert patch == unblock_patch()
        self.pods[name]["metadata"].get("annotations", {}).pop(WAIT_ANNOTATION, None)
        return self.pods[name]


def replace_with(uid: str, *, marked: bool = False, init: bool = True) -> Any:
    """A DaemonSet controller step: terminating pods go, a new one appears."""
    def step(store: Pods) -> None:
        for name in [n for n, p in store.pods.items() if p["metadata"].get("deletionTimestamp")]:
            del store.pods[name]
        store.pods[f"dp-{uid}"] = pod(uid, marked=marked, init=init)
    return step


def mark(uid: str) -> Any:
    def step(store: Pods) -> None:
        store.pods[f"dp-{uid}"]["metadata"]["annotations"] = {WAIT_ANNOTATION: "true"}
    return step


def nothing(store: Pods) -> None:
    pass


def make(store: Pods, timeout: float = 10.0) -> tuple[DevicePluginPods, list[float]]:
    """A fake clock advanced by each wait, so timeouts are exercised without sleeping."""
    now = itertools.count()
    waits: list[float] = []

    class Stop:
        def wait(self, seconds: float) -> bool:
            waits.append(seconds)
            return False

    dpp = DevicePluginPods(store, NS, NODE, timeout=timeout, interval=1.0, clock=lambda: float(next(now)))
    dpp.stop = Stop()  # type: ignore[assignment]
    return dpp, waits


def test_pure_helpers() -> None:
    assert WAIT_ANNOTATION == consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION == \
        "sriovnetwork.openshift.io/device-plugin-wait-config"
    a, b, c = pod("a"), pod("b", terminating=True), pod("c", marked=True)
    assert live([a, b, c]) == [a, c]
    assert replacements([a, b, c], ["a"]) == [c]
    assert is_waiting(c) and not is_waiting(a)
    assert expects_mark(a) and not expects_mark(pod("d", init=False))
    assert expects_mark({"spec": {"initContainers": [{"command": ["/bin/sriovop"], "args": ["wait-for-config"]}]}})
    assert unblock_patch() == {"metadata": {"annotations": {WAIT_ANNOTATION: None}}}
    assert not Restart().had_pods and Restart(deleted=["a"]).had_pods


def test_restart_deletes_and_waits_for_a_new_uid() -> None:
    store = Pods(pod("old"))
    store.on_list = [nothing, nothing, replace_with("new")]  # the replacement shows up on the 3rd list
    dpp, waits = make(store)
    done = dpp.restart()
    assert done.deleted == ["old"] and done.replacement == "new"
    assert ("delete", "dp-old") in store.calls
    assert waits == [1.0]  # polled once more before the replacement was there


def test_restart_without_pods_does_not_wait() -> None:
    store = Pods(pod("elsewhere", node="n2"))
    dpp, waits = make(store)
    done = dpp.restart()
    assert done == Restart() and waits == []
    assert store.calls == [("list",)]


def test_restart_gives_up_after_the_timeout_and_goes_on() -> None:
    store = Pods(pod("old"))
    dpp, waits = make(store, timeout=5.0)
    done = dpp.restart()
    assert done.deleted == ["old"] and done.replacement is None
    assert 1 <= len(waits) <= 5


def test_terminating_pods_are_neither_deleted_again_nor_replacements() -> None:
    store = Pods(pod("going", terminating=True), pod("old"))
    store.on_list = [nothing, replace_with("new")]
    dpp, _ = make(store)
    done = dpp.restart()
    assert done.deleted == ["old"] and done.replacement == "new"
    assert ("delete", "dp-going") not in store.calls


def test_restart_without_wait_only_deletes() -> None:
    store = Pods(pod("old"))
    dpp, waits = make(store)
    assert dpp.restart(wait=False).deleted == ["old"]
    assert waits == [] and store.calls == [("list",), ("delete", "dp-old")]


def test_wait_and_unblock_removes_the_mark_of_the_replacement_only() -> None:
    store = Pods(pod("new"))
    store.on_list = [nothing, mark("new")]  # the init container marks its pod a moment later
    dpp, _ = make(store)
    assert dpp.wait_and_unblock(Restart(deleted=["old"], replacement="new"))
    assert not is_waiting(store.pods["dp-new"])
    assert store.calls[-1] == ("patch", "dp-new")


def test_wait_and_unblock_does_not_wait_for_a_pod_without_the_init_container() -> None:
    """A DaemonSet rendered while the gate was off: its pods never mark themselves."""
    store = Pods(pod("new", init=False))
    dpp, waits = make(store, timeout=100.0)
    assert not dpp.wait_and_unblock(Restart(deleted=["old"], replacement="new"))
    assert waits == [] and [c for c in store.calls if c[0] == "patch"] == []


def test_wait_and_unblock_without_a_restart_unblocks_what_waits_now() -> None:
    store = Pods(pod("a", marked=True))
    dpp, waits = make(store)
    assert dpp.wait_and_unblock(Restart())
    assert waits == [] and not is_waiting(store.pods["dp-a"])


def test_steady_state_unblocks_only_marked_live_pods() -> None:
    store = Pods(pod("a", marked=True), pod("b"), pod("c", marked=True, terminating=True))
    dpp, _ = make(store)
    assert dpp.unblock_waiting() == 1
    assert [c for c in store.calls if c[0] == "patch"] == [("patch", "dp-a")]


def test_steady_state_reads_the_informer_cache_once_it_has_synced() -> None:
    store = Pods(pod("a", marked=True), pod("b"))
    dpp, _ = make(store)
    cache: list[Any] | None = None
    dpp.cached = lambda: cache
    assert dpp.unblock_waiting() == 1, "not synced yet: listed live"
    assert store.calls == [("list",), ("patch", "dp-a")]
    cache = [pod("b"), pod("c", marked=True), pod("d", marked=True, terminating=True)]
    store.pods["dp-c"] = pod("c", marked=True)
    store.calls.clear()
    assert dpp.unblock_waiting() == 1
    assert store.calls == [("patch", "dp-c")], "synced: no list"


@pytest.mark.parametrize("where", ["list", "delete"])
def test_api_errors_are_logged_not_raised(where: str) -> None:
    store = Pods(pod("old", marked=True))
    store.fail[where] = Forbidden(403, "pods is forbidden")
    dpp, _ = make(store, timeout=2.0)
    assert dpp.restart().deleted == []
    if where == "list":
        assert dpp.unblock_waiting() == 0


def test_bad_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="timeout and interval"):
        DevicePluginPods(Pods(), NS, NODE, timeout=0)
