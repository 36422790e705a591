"""Running the network and node-policy controllers in-process against the real API server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from sriovop.api.v1.kinds import NETWORK_KINDS
from sriovop.controllers.networks import NetworkReconciler
from sriovop.controllers.node_policy import NodePolicyReconciler
from sriovop.controllers.policy_status import PolicyStatusReconciler
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.events import EventRecorder
from sriovop.runtime.manager import Manager

RESOURCE_PREFIX = "openshift.io"


def client_for(kubeconfig: Path) -> Client:
    return Client(load_config(str(kubeconfig)))


@contextmanager
def running(mgr: Manager, recorder: EventRecorder | None = None) -> Iterator[Manager]:
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            mgr.start(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"{mgr.name}-thread", daemon=True)
    thread.start()
    try:
        if not mgr.elected.wait(60):
            raise AssertionError(f"manager {mgr.name} did not start its controllers: {errors!r}")
        yield mgr
    finally:
        stop.set()
        thread.join(60)
        if recorder is not None:
            recorder.stop()
        assert not thread.is_alive(), f"manager {mgr.name} did not stop within 60 s"
        assert not errors, f"manager {mgr.name} failed: {errors!r}"


@contextmanager
def network_controllers(kubeconfig: Path, operator_namespace: str) -> Iterator[Client]:
    """The cluster-wide manager with the three network controllers, as the operator wires them."""
    client = client_for(kubeconfig)
    mgr = Manager(client, name=f"networks-{operator_namespace}", registry=CollectorRegistry())
    recorder = EventRecorder(client, component="sriov-network-operator")
    for kind in NETWORK_KINDS:
        NetworkReconciler(kind, mgr.client, mgr.client, operator_namespace, RESOURCE_PREFIX, recorder).setup(mgr)
    with running(mgr, recorder):
        yield client


@contextmanager
def node_policy_controller(kubeconfig: Path, operator_namespace: str, **kw: Any) -> Iterator[NodePolicyReconciler]:
    """The namespaced manager with the node policy controller, as the operator wires it."""
    client = client_for(kubeconfig)
    mgr = Manager(client, name=f"policy-{operator_namespace}", namespaces={operator_namespace},
                  registry=CollectorRegistry())
    recorder = EventRecorder(client, component="sriov-network-operator")
    reconciler = NodePolicyReconciler(mgr.client, mgr.client, operator_namespace, recorder=recorder,
                                      api_reader=mgr.api_reader, **kw)
    reconciler.setup(mgr)
    with running(mgr, recorder):
        yield reconciler


@contextmanager
def policy_status_controller(kubeconfig: Path, operator_namespace: str) -> Iterator[PolicyStatusReconciler]:
    """The namespaced manager with the policy/pool status controller, as the operator wires it."""
    client = client_for(kubeconfig)
    mgr = Manager(client, name=f"status-{operator_namespace}", namespaces={operator_namespace},
                  registry=CollectorRegistry())
    reconciler = PolicyStatusReconciler(mgr.client, operator_namespace)
    reconciler.setup(mgr)
    with running(mgr):
        yield reconciler
