"""Judging one node per class of alike nodes decides every policy as the walk over every node does.

The property test builds small clusters whose nodes repeat a few hardware shapes, label values and
platforms, stores peer policies on them, and judges a candidate policy twice: through a snapshot view
(its version lets the rules judge one node per class and keep their groupings) and through the same
snapshot with no version (every selected node judged, as a live view is). Verdicts and denial messages,
node names included, must be the same.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sriovop.policyrules.node_classes import NodeClassMemo, first_of_each_class
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.handler import VALIDATING_PATH, AdmissionHandler
from test.support.webhook_objects import NICS, SETTINGS, iface, mellanox_cx6, node, node_state, policy, review


class EveryNodeView(StaticClusterView):
    """The same snapshot with no version: the rules judge every selected node and keep nothing."""

    def version(self) -> Hashable:
        return None


def verdict(view: StaticClusterView, obj: dict[str, Any]) -> tuple[bool, str]:
    status, answer = AdmissionHandler(view, SETTINGS).handle(
        VALIDATING_PATH, json.dumps(review("SriovNetworkNodePolicy", obj)).encode())
    assert status == 200
    response = answer["response"]
    return response["allowed"], (response.get("status") or {}).get("message", "")


SHAPES = [
    [iface("ens1f0", "0000:3b:00.0", device="158a"), iface("ens1f1", "0000:3b:00.1", device="158a")],
    [iface("ens1f0", "0000:3b:00.0", device="158a", totalvfs=4, alt_names=["enp59s0f0"])],
    [mellanox_cx6("ens1f0")],
    [iface("ens1f0", "0000:3b:00.0", device="1528")],  # an unsupported model
    [],
]
ZONES = ["a", "b"]
RACKS = ["r1", "r2", "r3"]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    count = draw(st.integers(1, 12))
    nodes, states = [], []
    for i in range(count):
        name = f"n{i}"
        labels = {"node-role.kubernetes.io/worker": "", "zone": draw(st.sampled_from(ZONES)),
                  "rack": draw(st.sampled_from(RACKS)), "kubernetes.io/hostname": name}
        nodes.append(node(name, labels, draw(st.sampled_from(["", "aws:///i-1"]))))
        shape = draw(st.sampled_from(range(len(SHAPES)) if i else range(len(SHAPES) + 1)))
        if shape < len(SHAPES):
            states.append(node_state(name, SHAPES[shape]))
    peers = [policy(f"peer{j}", **draw(policy_specs(count))) for j in range(draw(st.integers(0, 5)))]
    return nodes, states, peers


def policy_specs(count: int) -> st.SearchStrategy[dict[str, Any]]:
    shared = st.sampled_from([{}, {"zone": "a"}, {"zone": "b"}, {"rack": "r2"}, {"zone": "b", "rack": "r1"}])
    selectors = shared | st.builds(lambda i: {"kubernetes.io/hostname": f"n{i}"}, st.integers(0, count - 1))
    ranges = st.tuples(st.integers(0, 5), st.integers(0, 5)).map(lambda r: f"{min(r)}-{max(r)}")
    nic = st.one_of(
        st.builds(lambda pf, r: {"pfNames": [f"{pf}#{r}"]}, st.sampled_from(["ens1f0", "enp59s0f0", "ens1f1"]), ranges),
        st.just({"vendor": "15b3"}),
        st.just({"rootDevices": ["0000:3b:00.0"]}),
    )
    return st.fixed_dictionaries({
        # Mostly admissible on their own, so that the conflicts between policies decide.
        "nodeSelector": selectors, "nicSelector": nic, "numVfs": st.sampled_from([1, 2, 4, 6, 8, 8, 8, 70]),
        "externallyManaged": st.sampled_from([False, False, False, False, True]),
    })


@settings(max_examples=300, deadline=None)
@given(clusters(), st.data())
def test_judging_one_node_per_class_decides_as_the_walk_over_every_node(
        cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]], data: st.DataObject) -> None:
    nodes, states, peers = cluster
    candidate = policy("p1", **data.draw(policy_specs(len(nodes))))
    if peers and data.draw(st.booleans()):  # an update of a stored policy: its stored copy is not its peer
        candidate = policy(peers[0]["metadata"]["name"], **candidate["spec"])
    by_class = StaticClusterView(nodes, states, peers, [], NICS)
    every_node = EveryNodeView(nodes, states, peers, [], NICS)
    expected = verdict(every_node, candidate)
    assert verdict(by_class, candidate) == expected
    assert verdict(by_class, candidate) == expected  # again, from the kept classes and groupings


def test_a_node_whose_labels_alone_bring_a_conflicting_peer_is_judged() -> None:
    """Two nodes of one hardware shape; only the second one's zone is selected by a peer on the same VFs."""
    worker = {"node-role.kubernetes.io/worker": ""}
    nodes = [node("n0", {**worker, "zone": "a"}), node("n1", {**worker, "zone": "b"})]
    states = [node_state(name, SHAPES[0]) for name in ("n0", "n1")]
    peers = [policy("peer0", nodeSelector={"zone": "b"}, nicSelector={"pfNames": ["ens1f0#0-3"]}, numVfs=8)]
    candidate = policy("p1", nodeSelector=worker, nicSelector={"pfNames": ["ens1f0#2-5"]}, numVfs=8)
    for view in (StaticClusterView(nodes, states, peers, [], NICS), EveryNodeView(nodes, states, peers, [], NICS)):
        allowed, message = verdict(view, candidate)
        assert not allowed and "overlapped with existing policy peer0" in message and "(node n1, PF ens1f0)" in message


def test_the_first_node_of_each_class_in_selection_order() -> None:
    nodes = [{"n": i, "c": c} for i, c in enumerate("abacbd")]
    assert [n["n"] for n in first_of_each_class(nodes, lambda n: n["c"])] == [0, 1, 3, 5]


def test_classes_are_kept_per_selection_and_version() -> None:
    memo = NodeClassMemo()
    calls: list[int] = []

    def class_of(n: dict[str, Any]) -> Hashable:
        calls.append(n["n"])
        return n["c"]

    nodes = ({"n": 0, "c": "a"}, {"n": 1, "c": "a"}, {"n": 2, "c": "b"})
    first = memo.representatives(nodes, "v1", class_of)
    assert [n["n"] for n in first] == [0, 2] and len(calls) == 3
    assert memo.representatives(nodes, "v1", class_of) is first and len(calls) == 3
    memo.representatives(list(nodes), "v1", class_of)  # another selection (a new sequence): computed
    assert len(calls) == 6
    memo.representatives(nodes, "v2", class_of)  # a new version: computed again
    assert len(calls) == 9


def test_a_bounded_memo_computes_beyond_its_limit() -> None:
    memo = NodeClassMemo(max_selections=1)
    calls: list[int] = []
    a, b = ({"n": 0},), ({"n": 1},)
    for _ in range(2):
        for nodes in (a, b):
            memo.representatives(nodes, "v", lambda n: calls.append(n["n"]) or n["n"])
    assert calls == [0, 1, 1]  # `a` kept, `b` beyond the limit
