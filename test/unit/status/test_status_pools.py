"""`sriovop status`'s rollout view: each node's phase, the counts per drain pool against its limit, and
what the command prints with `--summary`. (No cluster: an in-memory reader holds the objects, and
counts the requests `collect` makes.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from sriovop import cli
from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.controllers.policy_status import APPLYING, DRAINING, FAILED, READY, UNKNOWN, WAITING, node_phase
from sriovop.runtime.kinds import NODE, Kind
from sriovop.status import collect, render_summary, render_text
from sriovop.status.model import phase_of
from sriovop.status.pools import NO_POOL
from test.support.controllers_fake_api import FakeApi

NS = "sriov-network-operator"
PF = "0000:3b:00.0"


class CountingApi(FakeApi):
    """The fake API, counting reads by (verb, kind)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[tuple[str, str], int] = {}

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.reads[("get", kind.kind)] = self.reads.get(("get", kind.kind), 0) + 1
        return super().get(kind, name, namespace)

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Any = None,
             field_selector: Any = None) -> list[dict[str, Any]]:
        self.reads[("list", kind.kind)] = self.reads.get(("list", kind.kind), 0) + 1
        return super().list(kind, namespace, label_selector, field_selector)


def node(name: str, pool: str | None = None, *, cordoned: bool = False) -> dict[str, Any]:
    labels = {"pool": pool} if pool else {}
    return {"metadata": {"name": name, "labels": labels, "annotations": {consts.NODE_DRAIN_ANNOTATION: "Idle"}},
            "spec": {"unschedulable": True} if cordoned else {}}


def state(name: str, *, spec_vfs: int = 4, host_vfs: int = 4, sync: str = "Succeeded", desired: str = "Idle",
          current: str = "Idle", error: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS,
                         "annotations": {consts.NODE_STATE_DRAIN_ANNOTATION: desired,
                                         consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: current}},
            "spec": {"interfaces": [{"pciAddress": PF, "name": "ens1f0", "numVfs": spec_vfs}]},
            "status": {"syncStatus": sync, "lastSyncError": error,
                       "interfaces": [{"pciAddress": PF, "name": "ens1f0", "numVfs": host_vfs, "totalvfs": 8}]}}


def pool(name: str, max_unavailable: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS},
            "spec": {"maxUnavailable": max_unavailable, "nodeSelector": {"matchLabels": {"pool": name}}}}


@pytest.mark.parametrize(("sync", "desired", "current", "pending", "phase"), [
    ("Succeeded", "Idle", "Idle", False, READY),
    ("Succeeded", "", "", False, READY),  # annotations not written yet: no drain either way
    ("Succeeded", "Idle", "Idle", True, APPLYING),  # a new spec the daemon has not picked up
    ("InProgress", "Idle", "Idle", False, APPLYING),
    ("", "", "", True, UNKNOWN),  # no status yet
    ("InProgress", "Drain_Required", "Idle", True, WAITING),
    ("InProgress", "Reboot_Required", "Idle", True, WAITING),
    ("InProgress", "Drain_Required", "Draining", True, DRAINING),
    ("Succeeded", "Idle", "DrainComplete", False, DRAINING),  # the operator has not uncordoned it yet
    ("Failed", "Drain_Required", "DrainComplete", True, FAILED),  # retrying inside its slot
    ("Failed", "Idle", "Idle", True, FAILED),
])
def test_phase_of(sync: str, desired: str, current: str, pending: bool, phase: str) -> None:
    obj = {"metadata": {"annotations": {consts.NODE_STATE_DRAIN_ANNOTATION: desired,
                                        consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: current}},
           "status": {"syncStatus": sync}}
    assert phase_of(obj, pending) == phase
    # Only a pending change on a node that reports Succeeded differs from the operator's conditions.
    assert node_phase(obj) == (READY if phase == APPLYING and sync == "Succeeded" else phase)


def fleet() -> CountingApi:
    """Pool `bulk` (maxUnavailable 50% of 4 nodes: 2), pool `canary` (1 node, limit 1), one node in
    no pool (the default pool), one node in two pools, one NodeState whose Node is gone."""
    api = CountingApi()
    api.add(SRIOV_NETWORK_POOL_CONFIG, pool("bulk", "50%"))
    api.add(SRIOV_NETWORK_POOL_CONFIG, pool("canary", 1))
    twice = pool("twice", 1)
    twice["spec"]["nodeSelector"] = {"matchLabels": {"both": "yes"}}
    api.add(SRIOV_NETWORK_POOL_CONFIG, twice)
    for name, p, cordoned in (("b1", "bulk", False), ("b2", "bulk", True), ("b3", "bulk", True),
                              ("b4", "bulk", False), ("c1", "canary", True), ("d1", None, False),
                              ("x1", "bulk", False)):
        api.add(NODE, node(name, p, cordoned=cordoned))
    api.objects[("Node", "", "x1")]["metadata"]["labels"]["both"] = "yes"  # bulk and twice
    api.add(SRIOV_NETWORK_NODE_STATE, state("b1"))                                          # in sync
    api.add(SRIOV_NETWORK_NODE_STATE, state("b2", spec_vfs=8, sync="InProgress", desired="Drain_Required",
                                            current="Draining"))
    api.add(SRIOV_NETWORK_NODE_STATE, state("b3", spec_vfs=8, sync="Failed", desired="Drain_Required",
                                            current="DrainComplete", error="sriov_numvfs: device busy"))
    api.add(SRIOV_NETWORK_NODE_STATE, state("b4", spec_vfs=8, sync="InProgress", desired="Drain_Required"))
    api.add(SRIOV_NETWORK_NODE_STATE, state("c1", spec_vfs=8, sync="InProgress", desired="Drain_Required",
                                            current="Draining"))
    api.add(SRIOV_NETWORK_NODE_STATE, state("d1", spec_vfs=8))  # Succeeded, but not yet for this spec
    api.add(SRIOV_NETWORK_NODE_STATE, state("x1"))
    api.add(SRIOV_NETWORK_NODE_STATE, state("gone"))
    return api


def test_counts_per_pool_against_its_limit() -> None:
    report = collect(fleet(), NS)
    rows = {p.name: p for p in report.pools}
    assert sorted(rows) == sorted(["bulk", "canary", "default", NO_POOL])
    bulk = rows["bulk"]
    # The limit is the drain controller's: 50% of the 5 nodes the pool selects (x1 included), rounded down.
    assert (bulk.max_unavailable, bulk.limit, bulk.nodes) == ("50%", 2, 4)
    assert (bulk.ready, bulk.applying, bulk.waiting, bulk.draining, bulk.failed) == (1, 0, 1, 1, 1)
    assert bulk.slots_held == 2  # b2 draining and b3 failed inside its slot
    assert bulk.cordoned == 2 and bulk.not_ready == ["b2", "b3", "b4"] and not bulk.error
    canary = rows["canary"]
    assert (canary.limit, canary.nodes, canary.draining, canary.slots_held, canary.cordoned) == (1, 1, 1, 1, 1)
    default = rows["default"]
    assert (default.limit, default.nodes, default.applying, default.not_ready) == (1, 1, 1, ["d1"])
    lost = rows[NO_POOL]
    assert lost.nodes == 2 and lost.limit is None and lost.ready == 2 and not lost.not_ready
    assert lost.error == ("the drain controller will not drain these nodes: gone: its Node is gone; "
                          "node x1 belongs to more than one pool: bulk and twice")
    assert {n.node: n.pool for n in report.nodes}["x1"] == NO_POOL


def test_collect_lists_instead_of_reading_each_node() -> None:
    api = fleet()
    collect(api, NS)
    assert api.reads == {("list", "Node"): 1, ("list", "SriovNetworkPoolConfig"): 1,
                         ("list", "SriovNetworkNodeState"): 1}


def test_summary_text_and_json() -> None:
    report = collect(fleet(), NS)
    text = render_summary(report)
    lines = text.splitlines()
    assert lines[0].split() == ["POOL", "NODES", "READY", "APPLYING", "WAITING", "DRAINING", "FAILED", "CORDONED"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:] if line and not line.startswith((" ", "("))}
    assert rows["bulk"] == ["4", "1", "0", "1", "2/2", "1", "2"]
    assert rows["canary"] == ["1", "0", "0", "0", "1/1", "0", "1"]
    assert rows["default"] == ["1", "0", "1", "0", "0/1", "0", "0"]
    assert "failed: b3: sriov_numvfs: device busy" in text
    assert "b1" not in text  # no per-node screen
    table = text.split("\n\nfailed:")[0].splitlines()
    assert render_text(report).splitlines()[-len(table):] == table  # the full view ends with the same table
    data = report.to_json()
    row = next(p for p in data["pools"] if p["name"] == "bulk")
    assert row["waiting"] == 1 and row["slotsHeld"] == 2 and row["notReady"] == ["b2", "b3", "b4"]
    assert next(n for n in data["nodes"] if n["node"] == "b4")["phase"] == WAITING


def test_summary_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    api = fleet()
    monkeypatch.setattr("sriovop.runtime.config.load_config", lambda kubeconfig: None)
    monkeypatch.setattr("sriovop.runtime.client.Client", lambda config: _Closing(api))
    result = CliRunner().invoke(cli.main, ["status", "--summary", "-o", "json"], prog_name="sriovop")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"namespace", "pools"} and data["namespace"] == NS
    assert [p["name"] for p in data["pools"]] == sorted(["bulk", "canary", "default", NO_POOL])
    result = CliRunner().invoke(cli.main, ["status", "--summary"], prog_name="sriovop")
    assert result.exit_code == 0 and result.output.startswith("POOL") and "NODE b1" not in result.output


class _Closing:
    """The fake API as the command's Client: it closes it when done."""

    def __init__(self, api: CountingApi) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def close(self) -> None:
        pass
