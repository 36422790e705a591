"""Pool configs against the API server: a node in two pools is reported (Event on its NodeState) and
cannot start draining, without crashing anything; maxUnavailable 0 blocks; hardware-offload pools get
their finalizer; fixing the overlap lets the drain go."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.controllers.pool_config import REASON_POOL_CONFLICT, PoolConfigReconciler
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.events import EventRecorder
from sriovop.runtime.kinds import EVENT, NODE
from sriovop.runtime.manager import Manager
from test.support.kubelet import FakeKubelet
from test.support.operator_drain import (
    annotation,
    client_for,
    create_node,
    create_node_state,
    create_pool,
    request_drain,
    running_drain_manager,
)
from test.support.poll import wait_for


@contextmanager
def running_pool_manager(kubeconfig: Path, namespace: str) -> Iterator[None]:
    client = client_for(kubeconfig)
    mgr = Manager(client, name=f"pool-{namespace}", namespaces={namespace})
    recorder = EventRecorder(client, component="sriov-network-operator")
    PoolConfigReconciler(mgr.client, namespace, recorder).setup(mgr)
    stop = threading.Event()
    thread = threading.Thread(target=mgr.start, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)
        recorder.stop()


def events(client: Client, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENT, namespace, field_selector={"involvedObject.name": name})
            if e.get("reason") == reason]


def current(client: Client, namespace: str, node: str) -> str | None:
    return annotation(client.get(SRIOV_NETWORK_NODE_STATE, node, namespace), consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)


def test_node_in_two_pools_is_reported_and_not_drained(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    tag = uuid.uuid4().hex[:8]
    node = f"pool-{tag}"
    create_node(client, node, {"pool-a": tag, "pool-b": tag})
    create_node_state(client, namespace, node)
    create_pool(client, namespace, "a", {"pool-a": tag}, 1)
    create_pool(client, namespace, "b", {"pool-b": tag}, 1)
    with running_pool_manager(kubeconfig, namespace), FakeKubelet(client, namespace), \
            running_drain_manager(kubeconfig, namespace):
        found = wait_for(lambda: events(client, namespace, node, REASON_POOL_CONFLICT), 30,
                         "a PoolConfigConflict Event on the NodeState")
        assert f"node {node} belongs to more than one pool: a and b" in found[0]["message"]
        assert found[0]["type"] == "Warning"

        request_drain(client, namespace, node)
        time.sleep(3)  # the drain controller has had several attempts
        assert current(client, namespace, node) == consts.DRAIN_IDLE
        assert not client.get(NODE, node)["spec"].get("unschedulable")

        # Fix the overlap: the node is in pool "a" only, and the drain proceeds.
        client.patch(NODE, node, {"metadata": {"labels": {"pool-b": None}}})
        wait_for(lambda: current(client, namespace, node) == consts.DRAIN_COMPLETE, 60,
                 "the drain completing once the node is in one pool")
    client.delete(NODE, node)


def test_max_unavailable_zero_blocks_every_drain(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    tag = uuid.uuid4().hex[:8]
    node = f"frozen-{tag}"
    create_node(client, node, {"frozen": tag})
    create_node_state(client, namespace, node)
    create_pool(client, namespace, "frozen", {"frozen": tag}, 0)
    with running_drain_manager(kubeconfig, namespace):
        request_drain(client, namespace, node)
        time.sleep(3)
        assert current(client, namespace, node) == consts.DRAIN_IDLE
        client.patch(SRIOV_NETWORK_POOL_CONFIG, "frozen", {"spec": {"maxUnavailable": "100%"}}, namespace)
        wait_for(lambda: current(client, namespace, node) == consts.DRAIN_COMPLETE, 30,
                 "the drain starting once the pool allows it")
    client.delete(NODE, node)


def test_hardware_offload_pool_gets_and_loses_its_finalizer(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": "hwol", "namespace": namespace},
                                              "spec": {"ovsHardwareOffloadConfig": {"name": "mcp-offload"}}})
    create_pool(client, namespace, "plain", {"x": "y"}, 1)
    with running_pool_manager(kubeconfig, namespace):
        wait_for(lambda: consts.POOL_CONFIG_FINALIZER in (client.get(
            SRIOV_NETWORK_POOL_CONFIG, "hwol", namespace)["metadata"].get("finalizers") or []), 30,
            "the finalizer on the hardware-offload pool")
        assert not client.get(SRIOV_NETWORK_POOL_CONFIG, "plain", namespace)["metadata"].get("finalizers")
        client.delete(SRIOV_NETWORK_POOL_CONFIG, "hwol", namespace)

        def gone() -> bool:
            try:
                client.get(SRIOV_NETWORK_POOL_CONFIG, "hwol", namespace)
            except NotFound:
                return True
            return False

        wait_for(gone, 30, "the hardware-offload pool deleted once its finalizer is removed")
