"""A node deleted while it holds a drain slot: its NodeState returns to Idle at once (no drain left
showing as in progress for a node that no longer exists), and its pool's slot goes to the next node.

Host: none (the config daemon's annotation writes are made by the test); the shared kube-apiserver;
the drain controller in a manager in this process, as the operator wires it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.kinds import NODE
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


def test_deleted_draining_node_releases_its_drain(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    tag = uuid.uuid4().hex[:8]
    labels = {"drain-deleted-test": tag}
    first, second = f"deleted-{tag}-a", f"deleted-{tag}-b"
    create_pool(client, namespace, "one-at-a-time", labels, 1)
    for name in (first, second):
        create_node(client, name, labels)
        create_node_state(client, namespace, name)

    def current(name: str) -> str | None:
        return annotation(client.get(SRIOV_NETWORK_NODE_STATE, name, namespace),
                          consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)

    with running_drain_manager(kubeconfig, namespace):
        request_drain(client, namespace, first)
        wait_for(lambda: current(first) == consts.DRAIN_COMPLETE, 60, f"{first} drained")
        request_drain(client, namespace, second)
        client.delete(NODE, first)
        wait_for(lambda: current(first) == consts.DRAIN_IDLE, 60, f"{first}'s NodeState back to Idle")
        # The pool's only slot was the deleted node's; the other node gets it.
        wait_for(lambda: current(second) == consts.DRAIN_COMPLETE, 60, f"{second} drained")
    client.close()
