"""Reboot_Required is a full drain: every pod but DaemonSet pods is evicted; Drain_Required (partial)
only touches pods holding RESOURCE_PREFIX resources."""

from __future__ import annotations

import uuid
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE, POD
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


def exists(client: Client, namespace: str, pod: str) -> bool:
    try:
        client.get(POD, pod, namespace)
    except NotFound:
        return False
    return True


def test_reboot_evicts_everything_but_daemonset_pods(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    tag = uuid.uuid4().hex[:8]
    partial, full = f"partial-{tag}", f"full-{tag}"
    create_pool(client, namespace, "both", {"reboot-test": tag}, 2)
    for node in (partial, full):
        create_node(client, node, {"reboot-test": tag})
        create_node_state(client, namespace, node)
        create_pod(client, namespace, f"{node}-sriov", node, sriov=True)
        create_pod(client, namespace, f"{node}-plain", node, sriov=False)
        create_pod(client, namespace, f"{node}-ds", node, sriov=False, daemonset=True)
    with FakeKubelet(client, namespace), running_drain_manager(kubeconfig, namespace):
        request_drain(client, namespace, partial, consts.DRAIN_REQUIRED)
        request_drain(client, namespace, full, consts.REBOOT_REQUIRED)
        for node in (partial, full):
            wait_for(lambda n=node: annotation(client.get(SRIOV_NETWORK_NODE_STATE, n, namespace),
                                               consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_COMPLETE,
                     60, f"{node} drained")
    assert [exists(client, namespace, f"{partial}-{p}") for p in ("sriov", "plain", "ds")] == [False, True, True]
    assert [exists(client, namespace, f"{full}-{p}") for p in ("sriov", "plain", "ds")] == [False, False, True]
    for node in (partial, full):
        assert client.get(NODE, node)["spec"]["unschedulable"] is True
        client.delete(NODE, node)
