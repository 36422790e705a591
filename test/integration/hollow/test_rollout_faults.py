"""A policy change that needs a drain on every node, rolled across 24 hollow nodes in two pools
(`bulk`: 20 nodes, maxUnavailable 10% = 2; `canary`: 4 nodes, maxUnavailable 1), plain and with faults
landing mid-rollout. Each ends with every NodeState Succeeded at the new numVfs and nothing cordoned,
and an independent watcher never sees a pool over its maxUnavailable.

Host: simulated (one sriovop.sim host per hollow node; each apply takes about 1 s of VF creation);
a private kube-apiserver; two real operator processes with leader election; no kubelet.
The tests share one fleet and run in file order; the node deletion goes last (it shrinks the fleet).
The other faults (kube-apiserver restarted, daemons killed) run in test/bench/rollout.py --faults.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from sriovop import cli
from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE
from test.support.rollout import NS, RolloutPlan, RolloutScenario

#: The first policy goes to 10 nodes at a time (set-up, as the benchmark paces it for large fleets).
PLAN = RolloutPlan(nodes=24, canary=4, apply_delay=1.0, per_process=6, operators=2, first_wave=10)
#: Generous: the ideal is 10 waves of ~1 s; a busy 2-core machine makes each wave several seconds.
DEADLINE = 420.0


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RolloutScenario]:
    with RolloutScenario(tmp_path_factory.mktemp("rollout"), PLAN, audit=False) as sc:
        yield sc


def _rollout(sc: RolloutScenario, num_vfs: int) -> float:
    assert sc.watcher is not None
    sc.watcher.reset_max()
    return sc.change(num_vfs)


def _assert_within_limits(sc: RolloutScenario) -> None:
    assert sc.watcher is not None
    limits = PLAN.limits
    assert limits == {"bulk": 2, "canary": 1}
    for pool, seen in sc.watcher.max_in_flight.items():
        assert seen <= limits[pool], f"pool {pool}: {seen} nodes held a drain slot at once (limit {limits[pool]})"
    assert sc.watcher.cordoned == set()


def test_rollout_completes_within_max_unavailable(scenario: RolloutScenario) -> None:
    assert scenario.watcher is not None
    _rollout(scenario, 4)
    # `sriovop status --summary` follows the rollout as an on-call engineer would: all through it, each
    # pool's drain slots are counted against the limit the drain controller applies (never above it),
    # and the rollout is seen holding slots.
    seen_held: dict[str, int] = {}
    deadline = time.monotonic() + DEADLINE
    while scenario.watcher.count_configured(4) < PLAN.nodes and time.monotonic() < deadline:
        pools = _summary(scenario)
        assert {p["name"]: p["limit"] for p in pools} == PLAN.limits
        for p in pools:
            assert p["slotsHeld"] <= p["limit"], p
            seen_held[p["name"]] = max(seen_held.get(p["name"], 0), p["slotsHeld"])
    assert seen_held.get("bulk"), "the rollout ended before `sriovop status` saw a drain slot held"
    scenario.watcher.wait_configured(4, DEADLINE, expect=PLAN.nodes)
    _assert_within_limits(scenario)
    # The drains really ran in parallel up to the bulk pool's limit, and every pool drained.
    assert scenario.watcher.max_in_flight == {"bulk": 2, "canary": 1}
    # Once every NodeState is configured, the summary says every node of every pool is ready.
    done = {p["name"]: p for p in _summary(scenario)}
    assert {name: (p["nodes"], p["ready"], p["slotsHeld"], p["cordoned"], p["notReady"]) for name, p in done.items()} \
        == {"bulk": (20, 20, 0, 0, []), "canary": (4, 4, 0, 0, [])}


def _summary(sc: RolloutScenario) -> list[dict[str, Any]]:
    """`sriovop status --summary -o json` against the scenario's API server: its pools."""
    assert sc.cp is not None
    result = CliRunner().invoke(cli.main, ["status", "--summary", "-o", "json", "--kubeconfig", str(sc.cp.kubeconfig),
                                           "-n", NS], prog_name="sriovop")
    assert result.exit_code == 0, result.output
    pools: list[dict[str, Any]] = json.loads(result.output)["pools"]
    return pools


def test_leader_operator_killed_mid_rollout(scenario: RolloutScenario) -> None:
    assert scenario.watcher is not None
    _rollout(scenario, 5)
    scenario.wait_progress(5, 0.25, DEADLINE)
    scenario.kill_leader()
    scenario.watcher.wait_configured(5, DEADLINE, expect=PLAN.nodes)
    _assert_within_limits(scenario)


def test_policy_changed_again_mid_rollout_drains_for_the_new_value(scenario: RolloutScenario) -> None:
    # numVfs 5 -> 3, then 3 -> 4 with a quarter of the fleet configured for 3: the nodes drained for 3
    # drain again, the rest go straight to 4, and no pool ever goes over its limit in between.
    assert scenario.watcher is not None
    _rollout(scenario, 3)
    scenario.wait_progress(3, 0.25, DEADLINE)
    changed = scenario.change(4)
    drained_for_new = scenario.watcher.first_grant_after(changed, DEADLINE, num_vfs=4)
    assert drained_for_new > changed
    scenario.watcher.wait_configured(4, DEADLINE, expect=PLAN.nodes)
    _assert_within_limits(scenario)


def test_node_deleted_while_draining_leaves_no_stuck_drain(scenario: RolloutScenario) -> None:
    assert scenario.watcher is not None and scenario.client is not None
    _rollout(scenario, 6)
    gone = scenario.delete_draining_node(DEADLINE)
    scenario.watcher.wait_configured(6, DEADLINE, expect=PLAN.nodes - 1)
    _assert_within_limits(scenario)
    with pytest.raises(NotFound):
        scenario.client.get(NODE, gone)
    # Its NodeState is gone with it, or at least holds no drain slot that would block its pool.
    try:
        state = scenario.client.get(SRIOV_NETWORK_NODE_STATE, gone, NS)
    except NotFound:
        return
    current = (state["metadata"].get("annotations") or {}).get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
    assert current not in (consts.DRAINING, consts.DRAIN_COMPLETE), current
