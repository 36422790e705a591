"""Pool lookup, maxUnavailable and rdmaMode selection (upstream findNodePoolConfig / MaxUnavailable)."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.api.v1.maxunavailable import MaxUnavailableError
from sriovop.controllers.pool_config import (
    DEFAULT_POOL_NAME,
    PoolLookupError,
    PoolMembership,
    find_node_pool,
    max_unavailable,
    pool_conflicts,
    rdma_modes,
    selector_matches,
)


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def pool(name: str, selector: dict[str, Any] | None = None, max_unavail: int | str | None = None,
         rdma: str | None = None, hwol: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["nodeSelector"] = selector
    if max_unavail is not None:
        spec["maxUnavailable"] = max_unavail
    if rdma:
        spec["rdmaMode"] = rdma
    if hwol:
        spec["ovsHardwareOffloadConfig"] = {"name": hwol}
    return {"metadata": {"name": name, "namespace": "op"}, "spec": spec}


NODES = [node("w1", role="a"), node("w2", role="a"), node("w3", role="b"), node("w4")]


def test_node_in_no_pool_gets_the_default_pool_of_unpooled_nodes() -> None:
    pools = [pool("pa", {"matchLabels": {"role": "a"}}, 2)]
    p = find_node_pool(NODES[2], pools, NODES)
    assert p.is_default and p.name == DEFAULT_POOL_NAME
    assert p.nodes == ("w3", "w4")
    assert p.limit() == 1  # the default pool's maxUnavailable


def test_node_in_one_pool_gets_that_pool_and_its_members() -> None:
    pools = [pool("pa", {"matchLabels": {"role": "a"}}, 2, rdma="exclusive"),
             pool("pb", {"matchLabels": {"role": "b"}})]
    p = find_node_pool(NODES[0], pools, NODES)
    assert (p.name, p.nodes, p.limit(), p.rdma_mode) == ("pa", ("w1", "w2"), 2, "exclusive")


def test_nil_max_unavailable_is_unlimited_and_zero_blocks() -> None:
    assert find_node_pool(NODES[2], [pool("pb", {"matchLabels": {"role": "b"}})], NODES).limit() == -1
    assert find_node_pool(NODES[2], [pool("pb", {"matchLabels": {"role": "b"}}, 0)], NODES).limit() == 0


def test_two_matching_pools_is_an_error_naming_both() -> None:
    pools = [pool("pa", {"matchLabels": {"role": "a"}}), pool("all", {})]
    with pytest.raises(PoolLookupError, match="w1 belongs to more than one pool: all and pa"):
        find_node_pool(NODES[0], pools, NODES)
    assert set(pool_conflicts(pools, NODES)) == {"w1", "w2"}
    assert rdma_modes(NODES, pools) == {"w1": None, "w2": None, "w3": None, "w4": None}


def test_nil_and_empty_selectors_match_every_node() -> None:
    for sel in (None, {}):
        p = find_node_pool(NODES[3], [pool("all", sel, "50%")], NODES)
        assert p.name == "all" and len(p.nodes) == 4 and p.limit() == 2


def test_hardware_offload_pools_are_ignored() -> None:
    p = find_node_pool(NODES[0], [pool("hw", {}, 3, hwol="mcp-offload")], NODES)
    assert p.is_default and p.nodes == ("w1", "w2", "w3", "w4")


@pytest.mark.parametrize(("value", "count", "want"), [
    (None, 10, -1), (0, 10, 0), (3, 10, 3), (50, 2, 50), ("10%", 5, 0), ("10%", 10, 1), ("33%", 10, 3),
    ("99%", 10, 9), ("100%", 7, 7), ("1%", 100, 1),
])
def test_max_unavailable_scaling_rounds_down(value: Any, count: int, want: int) -> None:
    assert max_unavailable(value, count) == want


@pytest.mark.parametrize("value", [-1, "0%", "101%", "10", "abc%", "5.5%", True, 1.5])
def test_max_unavailable_rejects_bad_values(value: Any) -> None:
    with pytest.raises(MaxUnavailableError, match="maxUnavailable"):
        max_unavailable(value, 10)


def test_malformed_pool_max_unavailable_surfaces_from_limit() -> None:
    p = find_node_pool(NODES[2], [pool("pb", {"matchLabels": {"role": "b"}}, "-5%")], NODES)
    with pytest.raises(MaxUnavailableError):
        p.limit()


@pytest.mark.parametrize(("selector", "labels", "want"), [
    ({"matchExpressions": [{"key": "role", "operator": "In", "values": ["a", "b"]}]}, {"role": "b"}, True),
    ({"matchExpressions": [{"key": "role", "operator": "In", "values": ["a"]}]}, {}, False),
    ({"matchExpressions": [{"key": "role", "operator": "NotIn", "values": ["a"]}]}, {}, True),
    ({"matchExpressions": [{"key": "role", "operator": "NotIn", "values": ["a"]}]}, {"role": "a"}, False),
    ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, {"gpu": ""}, True),
    ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, {"gpu": ""}, False),
    ({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}, False),
])
def test_label_selector_semantics(selector: dict[str, Any], labels: dict[str, str], want: bool) -> None:
    assert selector_matches(selector, labels) is want


def test_malformed_selector_is_a_lookup_error_naming_the_pool() -> None:
    bad = pool("broken", {"matchExpressions": [{"key": "x", "operator": "Near", "values": ["1"]}]})
    with pytest.raises(PoolLookupError, match=r"pool broken: spec.nodeSelector: matchExpressions\[0\].operator"):
        find_node_pool(NODES[0], [bad], NODES)


def test_membership_answers_like_one_lookup_per_node() -> None:
    pools = [pool("pa", {"matchLabels": {"role": "a"}}, 1, rdma="shared"), pool("pb", {"matchLabels": {"role": "b"}})]
    membership = PoolMembership(pools, NODES)
    assert [membership.pool_of(n).name for n in NODES] == ["pa", "pa", "pb", DEFAULT_POOL_NAME]
    assert membership.pool_of(NODES[3]).nodes == ("w4",)
    assert rdma_modes(NODES, pools) == {"w1": "shared", "w2": "shared", "w3": None, "w4": None}
    assert pool_conflicts(pools, NODES) == {}


def test_a_malformed_selector_is_every_nodes_error_naming_the_pool() -> None:
    pools = [pool("pa", {"matchLabels": {"role": "a"}}),
             pool("zz", {"matchExpressions": [{"key": "role", "operator": "In"}]})]
    conflicts = pool_conflicts(pools, NODES)
    assert set(conflicts) == {"w1", "w2", "w3", "w4"}
    assert conflicts["w3"] == "pool zz: spec.nodeSelector: matchExpressions[0].values must be non-empty for operator In"


def test_every_nodes_pool_costs_one_pass_over_the_nodes_per_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """pool_conflicts over N nodes evaluates O(N x pools) selectors, not O(N^2 x pools): it runs on every
    pool change, and at 5,000 nodes the quadratic form took minutes."""
    import sriovop.controllers.pool_config as pc
    calls = 0
    real = pc.selector_matches

    def counting(selector: Any, labels: Any) -> bool:
        nonlocal calls
        calls += 1
        return real(selector, labels)

    monkeypatch.setattr(pc, "selector_matches", counting)
    nodes = [node(f"n{i}", role="a" if i % 2 else "b") for i in range(1000)]
    pools = [pool("pa", {"matchLabels": {"role": "a"}}), pool("pb", {"matchLabels": {"role": "b"}})]
    assert pool_conflicts(pools, nodes) == {}
    assert calls <= 2 * 2 * len(nodes)  # each pool's members once, then each node against each pool
