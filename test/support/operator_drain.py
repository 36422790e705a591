"""Drain-test scaffolding: Nodes, NodeStates and pods as API objects, a simulated config daemon,
and a watch-driven sampler of how many NodeStates hold a drain slot at each revision."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.controllers.drain import Drainer, DrainReconciler
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError
from sriovop.runtime.events import EventRecorder
from sriovop.runtime.kinds import NODE, POD
from sriovop.runtime.manager import Manager
from test.support.kubelet import mark_running

RESOURCE_PREFIX = "openshift.io"
SRIOV_RESOURCE = f"{RESOURCE_PREFIX}/intel_vfs"
IDLE_ANNOTATIONS = {consts.NODE_STATE_DRAIN_ANNOTATION: consts.DRAIN_IDLE,
                    consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE}


def client_for(kubeconfig: Path) -> Client:
    return Client(load_config(str(kubeconfig)))


def create_node(client: Client, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return client.create(NODE, {"metadata": {"name": name, "labels": labels,
                                             "annotations": {consts.NODE_DRAIN_ANNOTATION: consts.DRAIN_IDLE}}})


def create_node_state(client: Client, namespace: str, name: str) -> dict[str, Any]:
    return client.create(SRIOV_NETWORK_NODE_STATE, {
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(IDLE_ANNOTATIONS)}, "spec": {}})


def create_pool(client: Client, namespace: str, name: str, labels: dict[str, str],
                max_unavailable: int | str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": {"matchLabels": labels}}
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": name, "namespace": namespace},
                                                     "spec": spec})


def create_pod(client: Client, namespace: str, name: str, node: str, *, sriov: bool,
               labels: dict[str, str] | None = None, daemonset: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if sriov:
        resources = {"requests": {SRIOV_RESOURCE: "1"}, "limits": {SRIOV_RESOURCE: "1"}}
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if daemonset:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                    "uid": "00000000-0000-0000-0000-000000000001", "controller": True}]
    pod = client.create(POD, {"metadata": meta, "spec": {
        "nodeName": node, "terminationGracePeriodSeconds": 30,
        "containers": [{"name": "app", "image": "busybox", "resources": resources}]}})
    return mark_running(client, pod)


def request_drain(client: Client, namespace: str, node: str, value: str = consts.DRAIN_REQUIRED) -> None:
    """What the config daemon writes when it needs a drain (or, with Idle, when it is done)."""
    client.patch(NODE, node, {"metadata": {"annotations": {consts.NODE_DRAIN_ANNOTATION: value}}})
    client.patch(SRIOV_NETWORK_NODE_STATE, node,
                 {"metadata": {"annotations": {consts.NODE_STATE_DRAIN_ANNOTATION: value}}}, namespace)


def annotation(obj: dict[str, Any], key: str) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(key)


@contextmanager
def running_drain_manager(kubeconfig: Path, namespace: str, **drainer_kw: Any) -> Iterator[DrainReconciler]:
    """A namespaced manager running only the drain controller (as the operator wires it)."""
    client = client_for(kubeconfig)
    mgr = Manager(client, name=f"drain-test-{namespace}", namespaces={namespace})
    recorder = EventRecorder(client, component="sriov-network-operator")
    reconciler = DrainReconciler(client, namespace, Drainer(client, RESOURCE_PREFIX, **drainer_kw), recorder)
    reconciler.setup(mgr)
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            mgr.start(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name="drain-manager", daemon=True)
    thread.start()
    try:
        yield reconciler
    finally:
        stop.set()
        thread.join(60)
        recorder.stop()
        assert not thread.is_alive(), "the drain manager did not stop within 60 s"
        assert not errors, f"the drain manager failed: {errors!r}"


class DrainSampler:
    """Follows NodeStates with a watch and, after every event, counts those in Draining/DrainComplete.

    Events arrive in etcd revision order, so each count is the state of the namespace at one revision;
    `max_in_flight` is the largest over the whole run.
    """

    def __init__(self, client: Client, namespace: str, members: set[str]) -> None:
        self.client = client
        self.namespace = namespace
        self.members = members
        self.current: dict[str, str | None] = {}
        self.max_in_flight = 0
        self.samples = 0
        self.completed: set[str] = set()
        self.on_event: Callable[[dict[str, Any]], None] | None = None
        self._stop = threading.Event()
        self._stream: Any = None
        self._ready = threading.Event()
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, name="drain-sampler", daemon=True)

    def start(self) -> DrainSampler:
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError("the NodeState watch did not start")
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(10)

    def in_flight(self) -> int:
        return sum(1 for v in self.current.values() if v in (consts.DRAINING, consts.DRAIN_COMPLETE))

    def _run(self) -> None:
        try:
            page = self.client.list_page(SRIOV_NETWORK_NODE_STATE, self.namespace)
            for obj in page.items:
                self._observe(obj)
            self._stream = self.client.watch(SRIOV_NETWORK_NODE_STATE, self.namespace,
                                             resource_version=page.resource_version, timeout_seconds=600)
            self._ready.set()
            for _etype, obj in self._stream:
                if _etype == "BOOKMARK":
                    continue
                self._observe(obj)
                if self.on_event is not None:
                    self.on_event(obj)
                if self._stop.is_set():
                    return
        except ApiError as exc:
            if not self._stop.is_set():
                self.errors.append(f"sampler watch ended: {exc}")
        finally:
            self._ready.set()

    def _observe(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name not in self.members:
            return
        value = annotation(obj, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT)
        self.current[name] = value
        if value == consts.DRAIN_COMPLETE:
            self.completed.add(name)
        self.samples += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight())


