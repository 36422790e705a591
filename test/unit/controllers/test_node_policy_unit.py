"""Node policy controller pieces that need no API server: debounce, stale delay, software bridges."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sriovop.controllers.node_policy import NodePolicyReconciler, stale_delay_from_env
from sriovop.controllers.node_policy_apply import PolicyError, desired_bridges
from sriovop.controllers.pool_config import rdma_modes
from sriovop.runtime.controller import Request

NODE = {"metadata": {"name": "w0", "labels": {"x": "1"}}}
IFACES = [{"name": "ens1f0", "pciAddress": "0000:00:03.0", "vendor": "15b3", "deviceID": "101d"},
          {"name": "ens1f1", "pciAddress": "0000:00:03.1", "vendor": "15b3", "deviceID": "101d"}]


@pytest.mark.parametrize(("raw", "want"), [(None, 30), ("", 30), ("0", 0), ("5", 5), ("x", 30), ("-3", 30)])
def test_stale_delay_from_env(raw: str | None, want: int) -> None:
    env = {} if raw is None else {"STALE_NODE_STATE_CLEANUP_DELAY_MINUTES": raw}
    assert stale_delay_from_env(env) == want


class FakeQueue:
    def __init__(self) -> None:
        self.after: list[tuple[Request, float]] = []

    def add_after(self, item: Request, delay: float) -> None:
        self.after.append((item, delay))


class FakeController:
    def __init__(self) -> None:
        self.queue = FakeQueue()


def test_trigger_is_immediate_when_quiet_and_batched_within_the_window() -> None:
    r = NodePolicyReconciler(client=None, reader=None, namespace="op", debounce=5.0)
    ctrl = FakeController()
    r.controller = ctrl  # type: ignore[assignment]
    key = Request("op", "node-policy-sync-event")
    assert list(r.trigger({})) == [key]  # nothing ran recently: sync at once
    r._last_start = time.monotonic()  # a sync just started
    assert list(r.trigger({})) == []
    ((item, delay),) = ctrl.queue.after
    assert item == key and 4.0 < delay <= 5.0


def policy(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeSelector": {"x": "1"}, "numVfs": 4, "priority": 99,
                                                 "resourceName": name, **spec}}


def test_bridges_per_selected_pf_sorted_and_removed_by_a_later_policy() -> None:
    ovs = {"bridge": {"datapathType": "netdev"}, "uplink": {"interface": {"type": "dpdk"}}}
    with_bridge = policy("a", eSwitchMode="switchdev", mtu=9000, nicSelector={"vendor": "15b3"}, bridge={"ovs": ovs})
    assert desired_bridges([with_bridge], NODE, IFACES) == [
        {"name": "br-0000_00_03.0", "bridge": {"datapathType": "netdev"},
         "uplinks": [{"pciAddress": "0000:00:03.0", "name": "ens1f0",
                      "interface": {"type": "dpdk", "mtuRequest": 9000}}]},
        {"name": "br-0000_00_03.1", "bridge": {"datapathType": "netdev"},
         "uplinks": [{"pciAddress": "0000:00:03.1", "name": "ens1f1",
                      "interface": {"type": "dpdk", "mtuRequest": 9000}}]},
    ]
    without = policy("b", nicSelector={"rootDevices": ["0000:00:03.0"]})
    assert [b["name"] for b in desired_bridges([with_bridge, without], NODE, IFACES)] == ["br-0000_00_03.1"]


@pytest.mark.parametrize(("extra", "message"), [
    ({}, "eSwitchMode switchdev"),
    ({"eSwitchMode": "switchdev", "linkType": "ib"}, "linkType eth"),
    ({"eSwitchMode": "switchdev", "externallyManaged": True}, "externallyManaged"),
])
def test_bridge_errors(extra: dict[str, Any], message: str) -> None:
    p = policy("bad", nicSelector={"vendor": "15b3"}, bridge={"ovs": {}}, **extra)
    with pytest.raises(PolicyError, match=message):
        desired_bridges([p], NODE, IFACES)


def test_rdma_mode_from_the_single_pool_of_a_node() -> None:
    nodes = [{"metadata": {"name": n, "labels": labels}} for n, labels in
             [("a", {"p": "1"}), ("both", {"p": "1", "q": "1"}), ("none", {}), ("hw", {"h": "1"})]]
    pools = [
        {"metadata": {"name": "p"}, "spec": {"nodeSelector": {"matchLabels": {"p": "1"}}, "rdmaMode": "shared"}},
        {"metadata": {"name": "q"}, "spec": {"nodeSelector": {"matchLabels": {"q": "1"}}, "rdmaMode": "exclusive"}},
        {"metadata": {"name": "hw"}, "spec": {"nodeSelector": {"matchLabels": {"h": "1"}}, "rdmaMode": "exclusive",
                                              "ovsHardwareOffloadConfig": {"name": "mcp"}}},
    ]
    assert rdma_modes(nodes, pools) == {"a": "shared", "both": None, "none": None, "hw": None}
