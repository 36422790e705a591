"""The drain controller's cache check: a pair it calls settled is one a server reconcile leaves alone.

`settled(node, state)` lets a reconcile end without reading the server. For every combination of the
annotations it looks at, a reconcile that reads the same Node and NodeState from the server (the path
it skips) must then make no write, no drain or uncordon, no event, and return nothing to requeue; and a
reconcile whose cache shows a settled pair must not touch the server at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.drain.controller import DrainReconciler
from sriovop.controllers.drain.states import DRAIN_BLOCKED_BY_ANNOTATION, settled
from sriovop.runtime.controller import Request
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE, Kind

NS = "sriov-network-operator"
ABSENT = object()
NODE_VALUES = [ABSENT, consts.DRAIN_IDLE, consts.DRAIN_REQUIRED, consts.REBOOT_REQUIRED, "Rebooting"]
CURRENT_VALUES = [ABSENT, consts.DRAIN_IDLE, consts.DRAINING, consts.DRAIN_COMPLETE, "Paused"]
DESIRED_VALUES = [ABSENT, consts.DRAIN_IDLE, consts.DRAIN_REQUIRED, consts.REBOOT_REQUIRED]


def _annotations(pairs: Mapping[str, object]) -> dict[str, str]:
    return {k: str(v) for k, v in pairs.items() if v is not ABSENT}


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    node = {"metadata": {"name": "n1", "resourceVersion": "1", "annotations": _annotations(
        {consts.NODE_DRAIN_ANNOTATION: draw(st.sampled_from(NODE_VALUES))})}}
    state = {"metadata": {"name": "n1", "namespace": NS, "resourceVersion": "2", "annotations": _annotations({
        consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: draw(st.sampled_from(CURRENT_VALUES)),
        consts.NODE_STATE_DRAIN_ANNOTATION: draw(st.sampled_from(DESIRED_VALUES)),
        DRAIN_BLOCKED_BY_ANNOTATION: draw(st.sampled_from([ABSENT, "default/pod-1: PDB"])),
        consts.NODE_STATE_EXTERNAL_DRAINER_ANNOTATION: draw(st.sampled_from([ABSENT, "true", "false"])),
    })}}
    return node, state


class Server:
    """The API server as the reconcile sees it: gets and lists answered, every other call recorded."""

    def __init__(self, objects: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[str] = []

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Mapping[str, Any]:
        self.calls.append(f"get {kind.kind}")
        try:
            return self.objects[(kind.kind, name)]
        except KeyError:
            raise NotFound(404, f"{name} not found", {}) from None

    def list(self, kind: Kind, *args: Any, **kwargs: Any) -> list[Any]:
        self.calls.append(f"list {kind.kind}")
        return [o for (k, _), o in self.objects.items() if k == kind.kind]

    def patch(self, kind: Kind, name: str, *args: Any, **kwargs: Any) -> Mapping[str, Any]:
        self.calls.append(f"patch {kind.kind}")
        return self.objects[(kind.kind, name)]

    def writes(self) -> list[str]:
        return [c for c in self.calls if not c.startswith(("get ", "list "))]


class Drainer:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def drain(self, name: str, **kwargs: Any) -> None:
        self.calls.append(f"drain {name}")

    def uncordon(self, name: str) -> None:
        self.calls.append(f"uncordon {name}")


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append(reason)


def _reconciler(server: Server, drainer: Drainer, recorder: Recorder) -> DrainReconciler:
    return DrainReconciler(server, NS, drainer, recorder)  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(pairs())
def test_a_settled_pair_is_left_alone_by_the_server_reconcile(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    node, state = pair
    if not settled(node, state):
        return
    server = Server({("Node", "n1"): node, (SRIOV_NETWORK_NODE_STATE.kind, "n1"): state})
    drainer, recorder = Drainer(), Recorder()
    result = _reconciler(server, drainer, recorder).reconcile(Request(NS, "n1"))  # no cache: the server path
    assert result is None
    assert server.writes() == [] and drainer.calls == [] and recorder.events == []


@settings(max_examples=400, deadline=None)
@given(pairs())
def test_the_cache_check_spares_the_server_only_for_a_settled_pair(
        pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    node, state = pair
    objects = {("Node", "n1"): node, (SRIOV_NETWORK_NODE_STATE.kind, "n1"): state}
    server, cache = Server(objects), Server(objects)
    drainer, recorder = Drainer(), Recorder()
    reconciler = _reconciler(server, drainer, recorder)
    reconciler.cache = cache
    try:
        reconciler.reconcile(Request(NS, "n1"))
    except Exception:  # an invalid pair fails terminally, after reading the server
        pass
    assert (server.calls == []) == settled(node, state)


def test_a_pair_missing_from_the_cache_is_read_from_the_server() -> None:
    node = {"metadata": {"name": "n1", "annotations": {consts.NODE_DRAIN_ANNOTATION: consts.DRAIN_IDLE}}}
    server = Server({})  # the Node is gone: the reconcile releases its slot if it held one
    reconciler = _reconciler(server, Drainer(), Recorder())
    reconciler.cache = Server({(NODE.kind, "n1"): node})
    assert reconciler.reconcile(Request(NS, "n1")) is None
    assert server.calls == ["get Node", f"get {SRIOV_NETWORK_NODE_STATE.kind}"]


def test_idle_pair_with_a_stale_blocked_annotation_is_not_settled() -> None:
    node = {"metadata": {"name": "n1", "annotations": {consts.NODE_DRAIN_ANNOTATION: consts.DRAIN_IDLE}}}
    state = {"metadata": {"name": "n1", "annotations": {
        consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE,
        consts.NODE_STATE_DRAIN_ANNOTATION: consts.DRAIN_IDLE, DRAIN_BLOCKED_BY_ANNOTATION: "default/p: PDB"}}}
    assert not settled(node, state)
    del state["metadata"]["annotations"][DRAIN_BLOCKED_BY_ANNOTATION]
    assert settled(node, state)
