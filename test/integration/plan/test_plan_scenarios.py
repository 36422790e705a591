"""`sriovop plan` against reality: each scenario is planned on the real control plane, then applied with
the operator's node-policy and drain controllers and three config daemons running, and what happened is
compared with the plan field by field: every NodeState spec, the drain/reboot requests each daemon made,
the device-plugin ConfigMap, and (for pools) no more nodes draining at once than the plan says.

Hosts: three simulated SR-IOV hosts (sriovop.sim). n-a and n-b: an XXV710 (ens1f0, ens1f1) and an
82576 (ens2f0), IOMMU kernel arguments set; n-c: an E810 (ens1f0, ens1f1) and an 82576, no IOMMU
arguments (vfio-pci needs a reboot there).

Admission: the operator's policy webhook is deployed (test.support.plan_webhook: the real webhook
server, called by the real API server), so a denied scenario is refused by the API server too; the
same rules without a webhook are test_plan_webhook_modes's.

The scenarios run in order on one operator (each starts from the cluster the previous one left), so the
table doubles as a rollout story; each names what it is there to show in `expect`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE
from sriovop.plan.compute import compute_plan
from sriovop.plan.snapshot import read_snapshot
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import CONFIG_MAP
from test.support.plan_cluster import (
    ALL,
    HOSTS,
    Cluster,
    converged,
    create_or_replace,
    pol,
    reboot_if_asked,
    set_pools,
    short,
)
from test.support.plan_webhook import policy_webhook
from test.support.poll import wait_for


@dataclass
class Scenario:
    name: str
    apply: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    #: Pools to create or replace before planning (name -> spec), None deletes.
    pools: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    #: What the scenario is there to show: {"denied": True} | {node: "none"|"drain"|"reboot"} |
    #: {"changed": [nodes]} | {"pool:<name>": (at_once, waves)} | {"taken": (node, policy, winner)}.
    expect: dict[str, Any] = field(default_factory=dict)


R1, R3 = {"rack": "r1"}, {"rack": "r3"}
ENS1F0, ENS2F0 = "0000:18:00.0", "0000:28:00.0"
SCENARIOS = [
    Scenario("new policy: 4 VFs on ens1f0 everywhere (0 -> N never drains)", [pol("p-a", pf=["ens1f0"], prio=50)],
             expect={"n-a": "none", "n-b": "none", "n-c": "none", "changed": ["n-a", "n-b", "n-c"]}),
    Scenario("the same policy again changes nothing", [pol("p-a", pf=["ens1f0"], prio=50)],
             expect={"changed": []}),
    Scenario("numVfs up 4 -> 8 drains every node, one at a time in the default pool",
             [pol("p-a", pf=["ens1f0"], prio=50, vfs=8)],
             expect={"n-a": "drain", "n-b": "drain", "n-c": "drain", "pool:default": (1, 3)}),
    Scenario("numVfs down 8 -> 2", [pol("p-a", pf=["ens1f0"], prio=50, vfs=2)], expect={"n-a": "drain"}),
    Scenario("MTU 9000", [pol("p-a", pf=["ens1f0"], prio=50, vfs=2, mtu=9000)], expect={"n-b": "drain"}),
    Scenario("MTU back to 1500", [pol("p-a", pf=["ens1f0"], prio=50, vfs=2, mtu=1500)], expect={"n-c": "drain"}),
    Scenario("resourceName renamed: resources move, no drain", [pol("p-a", pf=["ens1f0"], prio=50, vfs=2, res="ra2")],
             expect={"n-a": "none"}),
    Scenario("isRdma only changes the device-plugin selectors",
             [pol("p-a", pf=["ens1f0"], prio=50, vfs=2, res="ra2", isRdma=True)], expect={"n-a": "none"}),
    Scenario("excludeTopology: device plugin only, NodeStates untouched",
             [pol("p-a", pf=["ens1f0"], prio=50, vfs=2, res="ra2", isRdma=True, excludeTopology=True)],
             expect={"changed": []}),
    Scenario("second policy on ens1f1 of rack r1 only", [pol("p-b", pf=["ens1f1"], sel=R1, prio=40)],
             expect={"changed": ["n-a"], "n-a": "none"}),
    Scenario("vfio-pci with the IOMMU arguments present: drain, no reboot",
             [pol("p-b", pf=["ens1f1"], sel=R1, prio=40, dt="vfio-pci")], expect={"n-a": "drain"}),
    Scenario("vfio-pci on a node without IOMMU arguments needs a reboot",
             [pol("p-c", pf=["ens1f1"], sel=R3, prio=40, dt="vfio-pci", vfs=2)], expect={"n-c": "reboot"}),
    Scenario("back to netdevice on n-c", [pol("p-c", pf=["ens1f1"], sel=R3, prio=40, vfs=2)],
             expect={"n-c": "drain"}),
    Scenario("higher priority policy with the same resourceName takes ens1f0 (by rootDevices)",
             [pol("p-d", rootDevices=[ENS1F0], prio=10, vfs=3, res="ra2", excludeTopology=True)],
             expect={"taken": ("n-a", "p-a", "p-d"), "n-a": "drain"}),
    Scenario("priority change: p-d drops to 90 and p-a wins ens1f0 back",
             [pol("p-d", rootDevices=[ENS1F0], prio=90, vfs=3, res="ra2", excludeTopology=True)],
             expect={"taken": ("n-b", "p-d", "p-a")}),
    Scenario("equal priority: the later name wins",
             [pol("p-d", rootDevices=[ENS1F0], prio=50, vfs=3, res="ra2", excludeTopology=True)],
             expect={"taken": ("n-c", "p-a", "p-d")}),
    Scenario("delete p-d", delete=["p-d"], expect={"n-a": "drain"}),
    Scenario("overlapping pfNames without ranges are denied", [pol("p-e", pf=["ens1f0"], prio=50, res="re")],
             expect={"denied": True}),
    Scenario("two files: p-a narrowed to #0-3 of 8 VFs, then p-e takes #4-7",
             [pol("p-a", pf=["ens1f0#0-3"], prio=50, vfs=8, res="ra2"),
              pol("p-e", pf=["ens1f0#4-7"], prio=50, vfs=8, res="re")], expect={"n-b": "drain"}),
    Scenario("an overlapping VF range is denied", [pol("p-f", pf=["ens1f0#2-5"], vfs=8, res="rf")],
             expect={"denied": True}),
    Scenario("delete p-e: its VF group goes, the VFs stay (no drain)", delete=["p-e"], expect={"n-a": "none"}),
    Scenario("numVfs 0 on a selected NIC is denied", [pol("p-g", pf=["ens2f0"], vfs=0)], expect={"denied": True}),
    Scenario("more VFs than the 82576 has is denied", [pol("p-g", pf=["ens2f0"], vfs=8)], expect={"denied": True}),
    Scenario("7 VFs on every 82576", [pol("p-g", pf=["ens2f0"], vfs=7, prio=30)], expect={"n-c": "none"}),
    Scenario("nodeSelector matching no node is denied", [pol("p-h", pf=["ens1f0"], sel={"rack": "r9"})],
             expect={"denied": True}),
    Scenario("nicSelector matching no PF is denied", [pol("p-h", pf=["ens9f9"])], expect={"denied": True}),
    Scenario("vendor + deviceID selects both E810 ports (n-c only) and wins them by priority",
             [pol("p-h", vendor="8086", deviceID="1593", vfs=2, prio=5, res="rh")],
             expect={"changed": ["n-c"], "taken": ("n-c", "p-a", "p-h")}),
    Scenario("rootDevices selects the 82576 everywhere, below p-g's priority (only the PF order changes)",
             [pol("p-i", rootDevices=[ENS2F0], vfs=3, prio=70, res="ri")],
             expect={"taken": ("n-a", "p-i", "p-g"), "n-a": "none", "n-c": "none"}),
    Scenario("rootDevices policy raised above p-g", [pol("p-i", rootDevices=[ENS2F0], vfs=3, prio=20, res="ri")],
             expect={"n-b": "drain"}),
    Scenario("delete p-i and p-h together", delete=["p-i", "p-h"], expect={"n-c": "drain"}),
    Scenario("pool ab (n-a, n-b) maxUnavailable 2: one wave there, the default pool one node",
             [pol("p-g", pf=["ens2f0"], vfs=5, prio=30)],
             pools={"ab": {"nodeSelector": {"matchLabels": {"pool": "ab"}}, "maxUnavailable": 2}},
             expect={"pool:ab": (2, 1), "pool:default": (1, 1)}),
    Scenario("pool ab at 50%: one node at a time, two waves", [pol("p-g", pf=["ens2f0"], vfs=6, prio=30)],
             pools={"ab": {"nodeSelector": {"matchLabels": {"pool": "ab"}}, "maxUnavailable": "50%"}},
             expect={"pool:ab": (1, 2)}),
    Scenario("pool ab without maxUnavailable: unlimited", [pol("p-g", pf=["ens2f0"], vfs=4, prio=30)],
             pools={"ab": {"nodeSelector": {"matchLabels": {"pool": "ab"}}}}, expect={"pool:ab": (2, 1)}),
    Scenario("linkType eth is written, nothing to reconfigure",
             [pol("p-g", pf=["ens2f0"], vfs=4, prio=30, linkType="eth")], expect={"n-a": "none"}),
    Scenario("nodeSelector narrowed to rack r1: n-b and n-c reset their 82576",
             [pol("p-g", pf=["ens2f0"], vfs=4, prio=30, linkType="eth", sel=R1)],
             pools={"ab": None}, expect={"n-b": "drain", "n-c": "drain", "changed": ["n-b", "n-c"]}),
    Scenario("deleting a policy that does not exist changes nothing", delete=["p-zz"], expect={"changed": []}),
    Scenario("p-b moves from vfio-pci back to netdevice with more VFs",
             [pol("p-b", pf=["ens1f1"], sel=R1, prio=40, vfs=6)], expect={"n-a": "drain"}),
    Scenario("pfNames by list: p-c on both E810 ports of n-c",
             [pol("p-c", pf=["ens1f1", "ens1f0#4-7"], sel=R3, prio=40, vfs=8)], expect={"changed": ["n-c"]}),
    Scenario("externallyManaged above the VFs the host has is denied",
             [pol("p-j", pf=["ens2f0"], vfs=7, sel=R3, externallyManaged=True)], expect={"denied": True}),
    Scenario("delete p-c: n-c's ens1f1 is reset", delete=["p-c"], expect={"n-c": "drain"}),
    Scenario("delete p-b and p-g", delete=["p-b", "p-g"], expect={"n-a": "drain"}),
    Scenario("delete p-a: every ens1f0 is reset", delete=["p-a"], expect={"n-a": "drain", "n-b": "drain",
                                                                          "n-c": "drain"}),
]


@pytest.fixture(scope="module", autouse=True)
def _policy_webhook(plan_cluster: Cluster, control_plane: Any) -> Iterator[None]:
    with policy_webhook(control_plane, plan_cluster, ALL):
        yield


@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s.name for s in SCENARIOS])
def test_plan_matches_what_the_operator_and_daemons_do(plan_cluster: Cluster, index: int) -> None:
    c, s = plan_cluster, SCENARIOS[index]
    assert len(SCENARIOS) >= 40
    set_pools(c, s.pools)
    snap = read_snapshot(c.client, c.namespace)
    given = s.apply or [pol(n) for n in s.delete]
    plan = compute_plan(snap, given, delete=bool(s.delete))
    by_short = {short(n["name"]): n for n in plan["nodes"]}
    assert set(by_short) == set(HOSTS)

    # What the scenario is there to show.
    assert plan["admission"]["allowed"] is not s.expect.get("denied", False), plan["admission"]
    for key, want in s.expect.items():
        if key in HOSTS:
            assert by_short[key]["disruption"] == want, (key, by_short[key])
        elif key == "changed":
            assert sorted(k for k, n in by_short.items() if n["changed"]) == sorted(want)
        elif key.startswith("pool:"):
            pool = next(p for p in plan["pools"] if p["name"] == key[5:])
            assert (pool["atOnce"], pool["waves"]) == want, pool
        elif key == "taken":
            node, loser, winner = want
            assert any(v["policy"] == loser and v.get("winner") == winner for v in by_short[node]["contested"]), \
                by_short[node]["contested"]
    disruptive = any(n["disruption"] != "none" for n in plan["nodes"])
    assert plan["exitCode"] == (1 if s.expect.get("denied") else 2 if disruptive else 0)

    groups = [frozenset(n["name"] for n in plan["nodes"] if n.get("pool") == p["name"]) for p in plan["pools"]]
    c.log.reset(groups)
    if not plan["admission"]["allowed"]:
        refused = [p for p in given if _refused(c, p)]
        assert refused, "the plan denies, but the API server stores every policy"
    else:
        for policy in given:
            name = policy["metadata"]["name"]
            if s.delete:
                try:
                    c.client.delete(SRIOV_NETWORK_NODE_POLICY, name, c.namespace)
                except NotFound:
                    pass
                continue
            create_or_replace(c, {**policy, "metadata": {"name": name, "namespace": c.namespace}})

    # Reality, field by field.
    for node in plan["nodes"]:
        name = node["name"]
        rebooted: list[bool] = []

        def done(n: str = name, pn: dict[str, Any] = node, r: list[bool] = rebooted) -> bool:
            if not r and pn["disruption"] == "reboot" and reboot_if_asked(c, n, pn):
                r.append(True)
            return converged(c, n, pn)

        wait_for(done, 120, f"{name} to converge on the planned spec")
        state = c.client.get(SRIOV_NETWORK_NODE_STATE, name, c.namespace)
        assert (state.get("spec") or {}).get("interfaces", []) == node["spec"]["interfaces"], name
        assert c.log.level(name) == node["disruption"], (name, c.log.seen.get(name), node)
    cm = wait_for(lambda: _device_plugin_matches(c, plan), 60, "the device-plugin ConfigMap")
    for node in plan["nodes"]:
        assert cm[node["name"]] == node["devicePluginConfig"]
    for group, pool in zip(groups, plan["pools"], strict=True):
        if pool["limit"] >= 0:
            assert c.log.max_draining.get(group, 0) <= pool["limit"], (pool, c.log.max_draining)
    assert not c.log.errors


def _refused(c: Cluster, policy: dict[str, Any]) -> bool:
    try:
        c.client.create(SRIOV_NETWORK_NODE_POLICY, {**policy, "metadata": {"name": policy["metadata"]["name"],
                                                                          "namespace": c.namespace}},
                        c.namespace, dry_run=True)
    except ApiError:
        return True
    return False


def _device_plugin_matches(c: Cluster, plan: dict[str, Any]) -> dict[str, str] | None:
    data = c.client.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, c.namespace).get("data") or {}
    ok = all(data.get(n["name"]) == n["devicePluginConfig"] for n in plan["nodes"])
    return dict(data) if ok else None
