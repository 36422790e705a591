"""The demo, step by step, as a platform engineer would bring sriovop up on a real cluster.

Control plane → CRDs, namespace, supported NICs, operator config → webhook (registered by URL) → two
operator replicas with leader election → two simulated worker nodes (different NIC models) with a
config daemon each → the demo policy and network → watch until every node reports Succeeded.
"""

from __future__ import annotations

import json
import shutil
import ssl
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION, SRIOV_NETWORK_NODE_STATE
from sriovop.api.v1.supportednics import supported_nic_ids_configmap
from sriovop.demo.convergence import Convergence, NodeProgress, observe
from sriovop.demo.identities import install_rbac, mint_identities
from sriovop.demo.processes import ProcessGroup, wait_for_line
from sriovop.demo.workdir import REPLACED
from sriovop.devcluster import ControlPlane, process
from sriovop.devcluster.bootstrap import apply_documents, install_crds, load_documents
from sriovop.devcluster.checkout import source_root
from sriovop.render.webhook_configs import Endpoint, operator_webhook_configs
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import (
    MUTATING_WEBHOOK_CONFIGURATION,
    NAMESPACE,
    NODE,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from sriovop.status import collect, model_names, render_text

NS = consts.DEFAULT_OPERATOR_NAMESPACE
RESOURCE_PREFIX = consts.DEFAULT_RESOURCE_PREFIX
DEMO_WEBHOOK_CONFIG_NAME = "sriov-operator-webhook-config-demo"
IMAGE_ENV = {
    "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE": "localhost/sriovop-config-daemon:dev",
    "SRIOV_DEVICE_PLUGIN_IMAGE": "localhost/sriovop-device-plugin:dev",
    "SRIOV_CNI_IMAGE": "ghcr.io/k8snetworkplumbingwg/sriov-cni:v2.9.0",
    "SRIOV_INFINIBAND_CNI_IMAGE": "ghcr.io/k8snetworkplumbingwg/ib-sriov-cni:v1.2.1",
    "SRIOV_NETWORK_WEBHOOK_IMAGE": "localhost/sriovop-webhook:dev",
    "NETWORK_RESOURCES_INJECTOR_IMAGE": "localhost/sriovop-webhook:dev",
}


def manifests_dir() -> Path:
    """The checkout's manifests/: the demo installs the shipped CRDs, RBAC and demo objects from it."""
    return source_root() / "manifests"


@dataclass(frozen=True)
class DemoNode:
    name: str
    nics: tuple[str, ...]


DEFAULT_NODES = (DemoNode("demo-worker-1", ("xxv710",)), DemoNode("demo-worker-2", ("e810",)))


@dataclass
class DemoResult:
    seconds: float
    converged: bool
    status_text: str
    kubeconfig: Path
    metrics_urls: list[str] = field(default_factory=list)


class Demo:
    def __init__(self, directory: Path, say: Callable[[str], None], operator_replicas: int = 2,
                 nodes: tuple[DemoNode, ...] = DEFAULT_NODES, timeout: float = 300.0, *,
                 least_privilege: bool = False, apiserver_args: list[str] | None = None,
                 operator_env: dict[str, str] | None = None) -> None:
        """`least_privilege`: install manifests/rbac/ and run the operator, the webhook and the config
        daemons as their own ServiceAccount users (else everything uses the admin kubeconfig).
        `apiserver_args` go to kube-apiserver (e.g. audit flags); `operator_env` adds to the operators'
        environment."""
        self.dir = directory
        self.least_privilege = least_privilege
        self.apiserver_args = list(apiserver_args or [])
        self.operator_env = dict(operator_env or {})
        self.identities: dict[str, Path] = {}
        self.webhook_url = ""
        self.say = say
        self.replicas = operator_replicas
        self.nodes = nodes
        self.timeout = timeout
        self.started = time.monotonic()
        self.procs = ProcessGroup(directory / "logs")
        self.cp: ControlPlane | None = None
        self.client: Client | None = None
        self.metrics_urls: list[str] = []

    def step(self, message: str) -> None:
        self.say(f"[{time.monotonic() - self.started:6.1f}s] {message}")

    # ---- the whole run ---------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> DemoResult:
        manifests_dir()  # without a source checkout: NotASourceCheckout (a click error) before anything starts
        for stale in REPLACED:
            shutil.rmtree(self.dir / stale, ignore_errors=True)
        self.procs.log_dir.mkdir(parents=True, exist_ok=True)
        self.step("building or reusing kube-apiserver and etcd (first run: several minutes)")
        self.cp = ControlPlane(self.dir / "cluster", extra_apiserver_args=self.apiserver_args).start()
        self.client = Client(load_config(str(self.cp.kubeconfig)))
        self.step(f"control plane ready at {self.cp.url}")
        self._bootstrap()
        self._start_webhook()
        self._start_operators()
        self._start_nodes()
        self._wait_for_discovery(stop)
        self._apply_workload()
        converged = self._wait_for_convergence(stop)
        names = model_names(supported_nic_ids_configmap(NS)["data"])
        status = render_text(collect(self.client, NS, names), colour=False)
        return DemoResult(time.monotonic() - self.started, converged, status, self.cp.kubeconfig, self.metrics_urls)

    def stop(self) -> None:
        self.procs.stop_all()
        if self.client is not None:
            self.client.close()
        if self.cp is not None:
            self.cp.stop()

    def kubeconfig_for(self, component: str) -> Path:
        """The kubeconfig `component` runs with: its ServiceAccount user, or the admin's."""
        assert self.cp is not None
        return self.identities.get(component, self.cp.kubeconfig)

    # ---- steps -----------------------------------------------------------------------------------
    def _bootstrap(self) -> None:
        assert self.client is not None and self.cp is not None
        names = install_crds(self.client, manifests_dir() / "crds")
        self.step(f"installed {len(names)} CRDs")
        if self.least_privilege:
            self.client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            install_rbac(self.client, manifests_dir() / "rbac")
            self.identities = dict(mint_identities(self.client, self.cp, NS))
            self.step(f"least privilege: RBAC from {manifests_dir() / 'rbac'}; operator, webhook and config daemons "
                      "run as their ServiceAccount users")
        apply_documents(self.client, [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
            supported_nic_ids_configmap(NS),
            *load_documents([manifests_dir() / "demo" / "operatorconfig.yaml"]),
        ])
        for node in self.nodes:
            self.client.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": node.name, "labels": {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux",
                                              "kubernetes.io/hostname": node.name}}})
        self.step(f"namespace {NS}, supported-nic-ids, SriovOperatorConfig default, "
                  f"Nodes {', '.join(n.name for n in self.nodes)}")

    def _start_webhook(self) -> None:
        assert self.cp is not None and self.client is not None
        wdir = self.dir / "webhook"
        wdir.mkdir(parents=True, exist_ok=True)
        cert, key = self.cp.issue_serving_cert(["127.0.0.1", "localhost"]).write(wdir, "serving")
        port = process.free_port()
        self.procs.sriovop("webhook", [
            "webhook", "--port", str(port), "--bind-address", "127.0.0.1", "--tls-cert-file", str(cert),
            "--tls-private-key-file", str(key), "--kubeconfig", str(self.kubeconfig_for("webhook")),
            "--namespace", NS,
            "--cache"], env={"RESOURCE_PREFIX": RESOURCE_PREFIX, "NAMESPACE": NS})
        ctx = ssl.create_default_context(cafile=str(self.cp.ca_file))
        deadline = time.monotonic() + 60
        while True:
            self.procs.check_alive()
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=2, context=ctx) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the webhook did not become ready within 60s")
            time.sleep(0.2)
        self.webhook_url = f"https://127.0.0.1:{port}"
        # Not the operator's own name: with enableOperatorWebhook false the operator deletes that one.
        validating, mutating = operator_webhook_configs(Endpoint.url(self.webhook_url, self.cp.ca_pem),
                                                        name=DEMO_WEBHOOK_CONFIG_NAME)
        self.client.create(VALIDATING_WEBHOOK_CONFIGURATION, validating)
        self.client.create(MUTATING_WEBHOOK_CONFIGURATION, mutating)
        self.step(f"webhook serving on https://127.0.0.1:{port} and registered (failurePolicy Fail)")

    def _start_operators(self) -> None:
        assert self.cp is not None
        env = {"RESOURCE_PREFIX": RESOURCE_PREFIX, "NAMESPACE": NS, **IMAGE_ENV, **self.operator_env}
        for i in range(1, self.replicas + 1):
            metrics, probes = process.free_port(), process.free_port()
            self.procs.sriovop(f"operator-{i}", [
                "operator", "--kubeconfig", str(self.kubeconfig_for("operator")), "--namespace", NS, "--leader-elect",
                "--leader-election-identity", f"demo-operator-{i}",
                "--metrics-bind-address", f"127.0.0.1:{metrics}", "--health-probe-bind-address",
                f"127.0.0.1:{probes}", "--log-format", "json"], env=env)
            self.metrics_urls.append(f"operator-{i}: http://127.0.0.1:{metrics}/metrics")
        self.step(f"{self.replicas} operator replicas started with leader election "
                  f"(logs in {self.procs.log_dir})")

    def _start_nodes(self) -> None:
        assert self.cp is not None
        for node in self.nodes:
            root = self.dir / "hosts" / node.name
            sim = self.procs.start(f"sim-{node.name}", [
                sys.executable, "-m", "sriovop.sim", "serve", "--root", str(root),
                *[arg for nic in node.nics for arg in ("--nic", nic)]])
            described = json.loads(wait_for_line(sim, "{", timeout=60))
            port = process.free_port()
            self.procs.sriovop(f"daemon-{node.name}", [
                "config-daemon", "--node-name", node.name, "--host-root", str(root), "--simulated-host", "--kubeconfig",
                str(self.kubeconfig_for("config-daemon")), "--namespace", NS, "--log-format", "json",
                "--requeue-after", "10",
                "--metrics-bind-address", f"127.0.0.1:{port}"], env={"NAMESPACE": NS})
            self.metrics_urls.append(f"{node.name} VF counters: http://127.0.0.1:{port}/metrics")
            pfs = ", ".join(f"{p.get('name', '?')} ({p.get('model', '?')})" for p in described.get("pfs", []))
            self.step(f"{node.name}: simulated host with {pfs or ', '.join(node.nics)}; config daemon started")

    def _wait_for_discovery(self, stop: threading.Event) -> None:
        assert self.client is not None
        self.step("waiting for the daemons to report their NICs in SriovNetworkNodeState status")
        deadline = time.monotonic() + self.timeout
        wanted = {n.name for n in self.nodes}
        while not stop.is_set():
            self.procs.check_alive()
            states = {s["metadata"]["name"]: s for s in self.client.list(SRIOV_NETWORK_NODE_STATE, NS)}
            ready = {n for n in wanted if ((states.get(n) or {}).get("status") or {}).get("interfaces")}
            if ready == wanted:
                counts = ", ".join(f"{n}: {len(states[n]['status']['interfaces'])} PFs" for n in sorted(wanted))
                self.step(f"discovered {counts}")
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"no NIC status from {sorted(wanted - ready)} within {self.timeout:.0f}s")
            stop.wait(0.5)
        raise KeyboardInterrupt

    def _apply_workload(self) -> None:
        assert self.client is not None
        docs = load_documents([manifests_dir() / "demo" / "policy.yaml", manifests_dir() / "demo" / "network.yaml"])
        for line in apply_documents(self.client, docs):
            self.step(f"applied {line} (admitted by the webhook)")

    def _wait_for_convergence(self, stop: threading.Event) -> bool:
        assert self.client is not None
        deadline = time.monotonic() + self.timeout
        last: dict[str, NodeProgress] = {}
        while not stop.is_set():
            self.procs.check_alive()
            conv: Convergence = observe(self.client, NS, [n.name for n in self.nodes])
            for name, progress in conv.nodes.items():
                if last.get(name) != progress:
                    self.step(f"{name}: {progress.describe()}")
                    last[name] = progress
            nad = _nad_exists(self.client)
            if conv.done and nad:
                self.step("every node reports Succeeded; NetworkAttachmentDefinition default/demo-net rendered")
                return True
            if time.monotonic() > deadline:
                return False
            stop.wait(0.5)
        raise KeyboardInterrupt


def _nad_exists(client: Client) -> bool:
    return any(n["metadata"]["name"] == "demo-net" for n in client.list(NETWORK_ATTACHMENT_DEFINITION, "default"))

