"""A PodDisruptionBudget blocks the drain: the node stays cordoned, the blocking pod is named on the
NodeState and in an Event, and the drain completes once the budget allows the eviction.

No controller-manager runs, so the test plays the disruption controller: it writes the PDB status
(observedGeneration, disruptionsAllowed) that the Eviction API consults.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.drain import DRAIN_BLOCKED_BY_ANNOTATION
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import EVENT, NODE, POD, POD_DISRUPTION_BUDGET
from test.support.kubelet import FakeKubelet
from test.support.operator_drain import (
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


def set_pdb_status(client: Client, namespace: str, name: str, allowed: int) -> None:
    pdb = client.get(POD_DISRUPTION_BUDGET, name, namespace)
    client.patch(POD_DISRUPTION_BUDGET, name, {"status": {
        "observedGeneration": pdb["metadata"]["generation"], "disruptionsAllowed": allowed,
        "currentHealthy": 1 + allowed, "desiredHealthy": 1, "expectedPods": 1 + allowed}},
        namespace, subresource="status")


def events(client: Client, namespace: str, node: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENT, namespace, field_selector={"involvedObject.name": node})
            if e.get("reason") == reason]


def pod_gone(client: Client, namespace: str, name: str) -> bool:
    try:
        client.get(POD, name, namespace)
    except NotFound:
        return True
    return False


def test_pdb_blocks_drain_until_it_allows_the_eviction(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    tag = uuid.uuid4().hex[:8]
    labels = {"drain-test": tag}
    node = f"pdb-{tag}"
    create_pool(client, namespace, "pdb-pool", labels, 1)
    create_node(client, node, labels)
    create_node_state(client, namespace, node)
    create_pod(client, namespace, "guarded", node, sriov=True, labels={"app": "guarded"})
    create_pod(client, namespace, "free", node, sriov=True, labels={"app": "free"})
    client.create(POD_DISRUPTION_BUDGET, {
        "metadata": {"name": "guard", "namespace": namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    set_pdb_status(client, namespace, "guard", allowed=0)

    # Short timeouts so that whole drain attempts fail and are retried while the PDB blocks.
    drainer_kw = {"timeout": 2.0, "attempts": 2, "retry_delay": 0.2, "eviction_retry_interval": 0.5,
                  "poll_interval": 0.2}
    with FakeKubelet(client, namespace), running_drain_manager(kubeconfig, namespace, **drainer_kw):
        request_drain(client, namespace, node)

        def blocked() -> str | None:
            state = client.get(SRIOV_NETWORK_NODE_STATE, node, namespace)
            return annotation(state, DRAIN_BLOCKED_BY_ANNOTATION)

        blocker = wait_for(blocked, 60, "the drain-blocked-by annotation")
        assert blocker.startswith(f"{namespace}/guarded: eviction refused"), blocker
        assert "disruption budget" in blocker, blocker
        wait_for(lambda: events(client, namespace, node, "DrainBlocked"), 30, "a DrainBlocked Event")
        message = events(client, namespace, node, "DrainBlocked")[0]["message"]
        assert f"{namespace}/guarded" in message, message
        # The unguarded pod goes; the guarded one stays; whole attempts fail and are reported.
        wait_for(lambda: pod_gone(client, namespace, "free"), 30, "the unguarded pod evicted")
        failed = wait_for(lambda: [e for e in events(client, namespace, node, "DrainNode")
                                   if "failed" in e["message"]], 60, "a failed drain attempt reported")
        assert "guarded" in failed[0]["message"] or "timed out" in failed[0]["message"]
        assert client.get(NODE, node)["spec"].get("unschedulable") is True
        state = client.get(SRIOV_NETWORK_NODE_STATE, node, namespace)
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAINING
        assert not pod_gone(client, namespace, "guarded")

        set_pdb_status(client, namespace, "guard", allowed=1)

        def complete() -> bool:
            s = client.get(SRIOV_NETWORK_NODE_STATE, node, namespace)
            return annotation(s, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_COMPLETE

        wait_for(complete, 120, "DrainComplete once the PDB allows the eviction")
        assert pod_gone(client, namespace, "guarded")
        state = client.get(SRIOV_NETWORK_NODE_STATE, node, namespace)
        assert annotation(state, DRAIN_BLOCKED_BY_ANNOTATION) is None
        assert client.get(NODE, node)["spec"].get("unschedulable") is True  # cordoned until the daemon is done

        request_drain(client, namespace, node, consts.DRAIN_IDLE)
        wait_for(lambda: not client.get(NODE, node)["spec"].get("unschedulable"), 30, "the node uncordoned")
        wait_for(lambda: annotation(client.get(SRIOV_NETWORK_NODE_STATE, node, namespace),
                                    consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE,
                 30, "current-state back to Idle")
    client.delete(NODE, node)
