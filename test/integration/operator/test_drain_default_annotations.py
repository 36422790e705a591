"""The drain controller's first pass over a node (Idle drain annotations where none are) when another
writer changes the same objects between its read and its write: the guarded PATCH loses the race, is
retried from a new read, and keeps what the other writer wrote.

Why: on a fresh install the policy controller labels every selected Node for the device plugin while
the drain controller annotates the same Nodes; at 5,000 nodes about 300 of the drain controller's
PATCHes met a Conflict and were logged as failed reconciles.

Host: none; the shared kube-apiserver; the drain reconciler called directly with a client that lets
another writer in just before its first PATCH of each object.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.controllers.drain import Drainer, DrainReconciler
from sriovop.runtime.client import Client
from sriovop.runtime.controller import Request, Result
from sriovop.runtime.kinds import NODE, Kind
from test.support.operator_drain import RESOURCE_PREFIX, annotation, client_for


class RacedClient:
    """A client whose first PATCH of each object is preceded by `other(kind, name)`: a write by someone
    else that moves the object's resourceVersion under the caller."""

    def __init__(self, client: Client, other: Any) -> None:
        self._client = client
        self._other = other
        self._raced: set[str] = set()
        self.patches: list[str] = []

    def patch(self, kind: Kind, name: str, body: Any, namespace: str | None = None, **kw: Any) -> Any:
        if name + kind.kind not in self._raced:
            self._raced.add(name + kind.kind)
            self._other(kind, name)
        self.patches.append(f"{kind.kind}/{name}")
        return self._client.patch(kind, name, body, namespace, **kw)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._client, attr)


def _bare_node_and_state(client: Client, namespace: str, name: str) -> None:
    client.create(NODE, {"metadata": {"name": name, "labels": {"drain-default-test": "yes"}}})
    client.create(SRIOV_NETWORK_NODE_STATE, {"metadata": {"name": name, "namespace": namespace}, "spec": {}})


def test_a_lost_race_is_retried_and_keeps_the_other_writers_change(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    name = f"default-{uuid.uuid4().hex[:8]}"
    _bare_node_and_state(client, namespace, name)

    def policy_controller(kind: Kind, obj_name: str) -> None:  # labels the node, as on a fresh install
        if kind is NODE:
            client.patch(NODE, obj_name, {"metadata": {"labels": {consts.DEVICE_PLUGIN_LABEL: "Enabled"}}})
        else:
            client.patch(kind, obj_name, {"metadata": {"labels": {"touched": "yes"}}}, namespace)

    raced = RacedClient(client, policy_controller)
    reconciler = DrainReconciler(raced, namespace, Drainer(raced, RESOURCE_PREFIX))  # type: ignore[arg-type]
    try:
        assert reconciler.reconcile(Request(namespace, name)) == Result(requeue=True)
        node = client.get(NODE, name)
        state = client.get(SRIOV_NETWORK_NODE_STATE, name, namespace)
        assert annotation(node, consts.NODE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
        assert node["metadata"]["labels"][consts.DEVICE_PLUGIN_LABEL] == "Enabled"
        for key in (consts.NODE_STATE_DRAIN_ANNOTATION, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT):
            assert annotation(state, key) == consts.DRAIN_IDLE
        assert state["metadata"]["labels"]["touched"] == "yes"
        # One lost PATCH and one retried PATCH per object.
        assert sorted(raced.patches) == sorted([f"Node/{name}"] * 2 + [f"SriovNetworkNodeState/{name}"] * 2)
        # The next pass finds nothing to default and writes nothing.
        raced.patches.clear()
        assert reconciler.reconcile(Request(namespace, name)) is None
        assert raced.patches == []
    finally:
        client.delete(NODE, name)
        client.close()


def test_an_annotation_written_meanwhile_is_left_as_it_is(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    name = f"default-{uuid.uuid4().hex[:8]}"
    _bare_node_and_state(client, namespace, name)

    def daemon(kind: Kind, obj_name: str) -> None:  # the config daemon asks for a drain first
        if kind is NODE:
            client.patch(NODE, obj_name, {"metadata": {"annotations": {
                consts.NODE_DRAIN_ANNOTATION: consts.DRAIN_REQUIRED}}})

    raced = RacedClient(client, daemon)
    reconciler = DrainReconciler(raced, namespace, Drainer(raced, RESOURCE_PREFIX))  # type: ignore[arg-type]
    try:
        reconciler.reconcile(Request(namespace, name))
        node = client.get(NODE, name)
        assert annotation(node, consts.NODE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED
        assert raced.patches.count(f"Node/{name}") == 1  # the lost one; the re-read found it written
    finally:
        client.delete(NODE, name)
        client.close()
