"""Cluster address plans: disjoint pod subnets and Service ranges per slot, names that fit the kernel."""

from __future__ import annotations

import itertools

import pytest

from sriovop.devcluster.addressing import MAX_NODES, SLOTS, AddressingError, ClusterNetwork, plan


def test_every_slot_and_node_gets_a_disjoint_subnet_and_a_valid_bridge_name() -> None:
    nets = [plan(slot, MAX_NODES, "192.0.2.2") for slot in range(SLOTS)]
    subnets = [n.subnet for net in nets for n in net.nodes]
    assert len(set(subnets)) == SLOTS * MAX_NODES
    for net in nets:
        assert all(n.subnet.subnet_of(net.pod_range) for n in net.nodes)  # type: ignore[arg-type]
        assert all(len(n.bridge) <= 15 for n in net.nodes), "IFNAMSIZ"
    for a, b in itertools.combinations(nets[:40], 2):
        assert not a.pod_range.overlaps(b.pod_range) and not a.service_range.overlaps(b.service_range)


def test_plan_names_nodes_and_the_kubernetes_service() -> None:
    net = plan(3, 2, "192.0.2.2")
    assert [n.name for n in net.nodes] == ["sriovop-node-1", "sriovop-node-2"]
    assert [str(n.subnet) for n in net.nodes] == ["10.208.48.0/24", "10.208.49.0/24"]
    assert str(net.nodes[0].gateway) == "10.208.48.1"
    assert net.kubernetes_service_ip == "10.96.3.1"
    assert ClusterNetwork.from_json(net.to_json()) == net


@pytest.mark.parametrize("count", [0, MAX_NODES + 1])
def test_node_count_out_of_range_is_refused_with_the_field_name(count: int) -> None:
    with pytest.raises(AddressingError, match="--nodes must be between 1 and 16"):
        plan(0, count, "192.0.2.2")
