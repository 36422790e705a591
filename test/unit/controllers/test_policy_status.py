"""Policy and pool status computed from NodeStates: counts, and conditions naming the nodes."""

from __future__ import annotations

from typing import Any

from sriovop.api.v1 import consts
from sriovop.controllers.policy_status import merged_conditions, policy_status, pool_status

IFACE = {"pciAddress": "0000:18:00.0", "name": "ens1f0", "vendor": "8086", "deviceID": "158b"}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def state(name: str, sync: str, desired: str = "Idle", current: str = "Idle", error: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {consts.NODE_STATE_DRAIN_ANNOTATION: desired,
                                                       consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: current}},
            "status": {"syncStatus": sync, "lastSyncError": error, "interfaces": [IFACE]}}


POLICY = {"metadata": {"name": "p"}, "spec": {"nodeSelector": {"zone": "a"}, "nicSelector": {"pfNames": ["ens1f0"]},
                                              "numVfs": 2, "resourceName": "r"}}


def test_policy_status_counts_and_names_failing_and_draining_nodes() -> None:
    nodes = [node("w1", zone="a"), node("w2", zone="a"), node("w3", zone="a"), node("w4", zone="b")]
    states = {"w1": state("w1", "Succeeded"), "w2": state("w2", "Failed", error="pf 0000:18:00.0: step x: boom"),
              "w3": state("w3", "InProgress", desired="Drain_Required", current="Draining"),
              "w4": state("w4", "Succeeded")}
    st = policy_status(POLICY, nodes, states)
    assert (st["matchedNodes"], st["readyNodes"]) == (3, 1)
    cond = {c["type"]: c for c in st["conditions"]}
    assert (cond["Ready"]["status"], cond["Ready"]["reason"]) == ("False", "NodesNotReady")
    assert cond["Ready"]["message"] == "1 of 3 selected nodes ready; not ready: w2, w3"
    assert (cond["Progressing"]["reason"], cond["Progressing"]["message"]) == ("Draining", "draining: w3")
    assert cond["Degraded"]["message"] == "failed: w2 (w2: pf 0000:18:00.0: step x: boom)"


def test_a_policy_that_reaches_no_node_is_not_ready() -> None:
    st = policy_status(POLICY, [node("w4", zone="b")], {"w4": state("w4", "Succeeded")})
    assert st["matchedNodes"] == 0
    assert [(c["type"], c["status"], c["reason"]) for c in st["conditions"]] == [
        ("Ready", "False", "NoMatchingNodes"), ("Progressing", "False", "Idle"), ("Degraded", "False", "NoFailures")]


def test_pool_status_lists_draining_nodes() -> None:
    pool = {"metadata": {"name": "ab"}, "spec": {"nodeSelector": {"matchLabels": {"pool": "ab"}}}}
    nodes = [node("w1", pool="ab"), node("w2", pool="ab"), node("w3")]
    states = {"w1": state("w1", "InProgress", desired="Drain_Required", current="DrainComplete"),
              "w2": state("w2", "InProgress", desired="Reboot_Required")}
    st = pool_status(pool, nodes, states)
    assert (st["nodeCount"], st["drainingNodes"]) == (2, ["w1"])
    assert {c["type"]: c["status"] for c in st["conditions"]} == {"Ready": "False", "Progressing": "True",
                                                                  "Degraded": "False"}
    progressing = next(c for c in st["conditions"] if c["type"] == "Progressing")
    assert progressing["message"] == "draining: w1; waiting for a drain slot: w2"


def test_transition_time_moves_only_when_the_status_flips() -> None:
    old = [{"type": "Ready", "status": "True", "reason": "A", "message": "m", "lastTransitionTime": "T0"}]
    same = merged_conditions(old, [{"type": "Ready", "status": "True", "reason": "B", "message": "n"}], 3)
    assert same[0]["lastTransitionTime"] == "T0" and same[0]["observedGeneration"] == 3
    flipped = merged_conditions(old, [{"type": "Ready", "status": "False", "reason": "B", "message": "n"}], 3)
    assert flipped[0]["lastTransitionTime"] != "T0"
