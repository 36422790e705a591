"""The drain annotation state machine and the pod filters of partial and full drains."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.controllers.drain.pods import pods_to_evict
from sriovop.controllers.drain.states import Action, decide, is_full_drain, missing_annotations, occupies_slot

IDLE, DRAIN, REBOOT = consts.DRAIN_IDLE, consts.DRAIN_REQUIRED, consts.REBOOT_REQUIRED
DRAINING, COMPLETE = consts.DRAINING, consts.DRAIN_COMPLETE


@pytest.mark.parametrize(("request_", "current", "action"), [
    (IDLE, IDLE, Action.NOTHING),
    (IDLE, DRAINING, Action.COMPLETE),
    (IDLE, COMPLETE, Action.COMPLETE),
    (DRAIN, IDLE, Action.START),
    (REBOOT, IDLE, Action.START),
    (DRAIN, DRAINING, Action.CONTINUE),
    (REBOOT, DRAINING, Action.CONTINUE),
    (DRAIN, COMPLETE, Action.NOTHING),
    (REBOOT, COMPLETE, Action.NOTHING),
    ("Rebooting", IDLE, Action.INVALID),
    (IDLE, "Paused", Action.INVALID),
])
def test_decision_table(request_: str, current: str, action: Action) -> None:
    assert decide(request_, current) is action


def test_only_draining_and_complete_take_a_pool_slot() -> None:
    assert [occupies_slot(s) for s in (IDLE, DRAINING, COMPLETE, None)] == [False, True, True, False]


def test_reboot_is_a_full_drain() -> None:
    assert is_full_drain(REBOOT) and not is_full_drain(DRAIN)


def test_missing_annotations() -> None:
    node = {"metadata": {"annotations": {consts.NODE_DRAIN_ANNOTATION: IDLE}}}
    state = {"metadata": {"annotations": {consts.NODE_STATE_DRAIN_ANNOTATION: IDLE}}}
    assert missing_annotations(node, state) == (False, True)
    assert missing_annotations({"metadata": {}}, {"metadata": {"annotations": {
        consts.NODE_STATE_DRAIN_ANNOTATION: IDLE, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: IDLE}}}) == (True, False)


def pod(name: str, requests: dict[str, str] | None = None, owner: str | None = None,
        mirror: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "o", "controller": True}]
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "x"}
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": {"requests": requests or {}}}]}}


PODS = [
    pod("sriov", {"openshift.io/intel_vfs": "1", "cpu": "1"}),
    pod("plain", {"cpu": "1"}),
    pod("ds", {"openshift.io/intel_vfs": "1"}, owner="DaemonSet"),
    pod("rs", owner="ReplicaSet"),
    pod("static", {"openshift.io/intel_vfs": "1"}, mirror=True),
]


def names(pods: list[Any]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_partial_drain_evicts_only_pods_requesting_the_prefix() -> None:
    assert names(pods_to_evict(PODS, full=False, resource_prefix="openshift.io")) == ["sriov"]


def test_full_drain_evicts_everything_but_daemonset_and_mirror_pods() -> None:
    assert names(pods_to_evict(PODS, full=True, resource_prefix="openshift.io")) == ["plain", "rs", "sriov"]


def test_other_prefix_is_not_sriov() -> None:
    assert pods_to_evict(PODS, full=False, resource_prefix="example.com") == []
