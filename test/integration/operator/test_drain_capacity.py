"""20 nodes ask for a drain at once; the pool allows 2: never more than 2 hold a slot, and all finish.

The config daemon is simulated: it requests the drain through the annotations, and when it sees
DrainComplete it checks what a daemon relies on (node cordoned, SR-IOV pods gone), then "applies"
and writes Idle back. The kubelet is simulated by FakeKubelet.
"""

from __future__ import annotations

import queue
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.drain import DRAIN_BLOCKED_BY_ANNOTATION
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE, POD
from test.support.kubelet import FakeKubelet
from test.support.operator_drain import (
    DrainSampler,
    annotation,
    client_for,
    create_node,
    create_node_state,
    create_pod,
    create_pool,
    request_drain,
    running_drain_manager,
)
from test.support.poll import wait_for

NODES = 20
MAX_UNAVAILABLE = 2


def test_twenty_simultaneous_drains_respect_max_unavailable(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    tag = uuid.uuid4().hex[:8]
    labels = {"drain-test": tag}
    names = [f"drain-{tag}-{i:02d}" for i in range(NODES)]
    create_pool(client, namespace, "two-at-a-time", labels, MAX_UNAVAILABLE)
    for name in names:
        create_node(client, name, labels)
        create_node_state(client, namespace, name)
        create_pod(client, namespace, f"{name}-sriov", name, sriov=True)
        create_pod(client, namespace, f"{name}-plain", name, sriov=False)
        create_pod(client, namespace, f"{name}-ds", name, sriov=True, daemonset=True)

    sampler = DrainSampler(client, namespace, set(names))
    completed: queue.Queue[str] = queue.Queue()
    problems: list[str] = []
    finished: set[str] = set()

    def on_event(obj: dict[str, Any]) -> None:
        if annotation(obj, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_COMPLETE:
            completed.put(obj["metadata"]["name"])

    def daemon() -> None:
        while True:
            name = completed.get()
            if name == "":
                return
            if name in finished:
                continue
            node = client.get(NODE, name)
            if not node["spec"].get("unschedulable"):
                problems.append(f"{name}: DrainComplete but the node is not cordoned")
            for pod in (f"{name}-sriov",):
                try:
                    client.get(POD, pod, namespace)
                    problems.append(f"{name}: DrainComplete but SR-IOV pod {pod} still exists")
                except NotFound:
                    pass
            finished.add(name)
            request_drain(client, namespace, name, consts.DRAIN_IDLE)

    sampler.on_event = on_event
    daemon_thread = threading.Thread(target=daemon, daemon=True)
    with FakeKubelet(client, namespace), running_drain_manager(kubeconfig, namespace):
        sampler.start()
        daemon_thread.start()
        try:
            with ThreadPoolExecutor(NODES) as pool:
                list(pool.map(lambda n: request_drain(client, namespace, n), names))

            def all_done() -> bool:
                states = client.list(SRIOV_NETWORK_NODE_STATE, namespace)
                return len(finished) == NODES and all(
                    annotation(s, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE
                    for s in states if s["metadata"]["name"] in names)

            wait_for(all_done, 240, "every node drained and back to Idle", interval=0.5)
        finally:
            completed.put("")
            daemon_thread.join(10)
            sampler.stop()

    assert not problems, problems
    assert not sampler.errors, sampler.errors
    assert sampler.completed == set(names)
    assert 1 <= sampler.max_in_flight <= MAX_UNAVAILABLE, sampler.max_in_flight
    # Everyone really ran in parallel up to the limit, not one at a time.
    assert sampler.max_in_flight == MAX_UNAVAILABLE
    for name in names:
        assert not client.get(NODE, name)["spec"].get("unschedulable"), f"{name} left cordoned"
        state = client.get(SRIOV_NETWORK_NODE_STATE, name, namespace)
        assert annotation(state, DRAIN_BLOCKED_BY_ANNOTATION) is None
        # A partial drain leaves pods without SR-IOV resources and DaemonSet pods alone.
        client.get(POD, f"{name}-plain", namespace)
        client.get(POD, f"{name}-ds", namespace)
        try:
            client.get(POD, f"{name}-sriov", namespace)
            raise AssertionError(f"{name}-sriov survived the drain")
        except NotFound:
            pass
    for name in names:
        client.delete(NODE, name)
