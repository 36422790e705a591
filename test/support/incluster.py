"""The operator installed on a 2-node cluster exactly as users install it, for the in-cluster proofs.

`sriovop dev cluster up --nodes 2` (with kube-apiserver auditing), `make images` archives loaded into
both nodes, `kubectl apply -k manifests/crds && kubectl apply -k manifests/` (unchanged). The
config-daemon pod on sriovop-node-2 manages a SIMULATED SR-IOV host (one XXV710 port) that runs on
this machine under /var/lib/sriovop-sim/<run>/sriovop-node-2 (the pod sees the machine at /host):
`SriovOperatorConfig.spec.configDaemonEnvVars.SRIOVOP_SIMULATED_HOST` points the pod at it.

Both nodes advertise the extended resource `openshift.io/intelnics` through the Node status (the
device-plugin pod, `sriovop device-plugin`, reads this machine's sysfs rather than the simulated host's,
so it finds no VFs and advertises nothing), so workload pods can request it: the operator's partial
drain evicts exactly the pods that request a `RESOURCE_PREFIX` resource.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG
from sriovop.devcluster.audit import AUDIT_LOG
from sriovop.devcluster.images.build import build_images
from sriovop.devcluster.images.load import load_archives
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import NODE, POD
from test.support.cluster import ClusterNodes, cluster_down, cluster_up
from test.support.controllers_harness import client_for
from test.support.kubectl import run_kubectl
from test.support.poll import wait_for
from test.support.rbac_audit import audit_policy

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "sriov-network-operator"
CONTROL_PLANE_NODE = "sriovop-node-1"
WORKER_NODE = "sriovop-node-2"
RESOURCE = "openshift.io/intelnics"
SRIOV_CAPABLE_LABEL = "feature.node.kubernetes.io/network-sriov.capable"
SIM_BASE = Path("/var/lib/sriovop-sim")
SERVICE_ACCOUNTS = ("sriov-network-operator", "sriov-network-config-daemon", "operator-webhook-sa",
                    "network-resources-injector-sa", "sriov-device-plugin")
AUDITED_USERS = tuple(f"system:serviceaccount:{NAMESPACE}:{sa}" for sa in SERVICE_ACCOUNTS)
#: Generous: the machine runs at a load of ~20 while the suite runs.
INSTALL_TIMEOUT_S = 600.0


def kubectl(kubeconfig: Path, *args: str, timeout: float = 300.0) -> str:
    return run_kubectl(kubeconfig, *args, timeout=timeout).stdout


@dataclass(frozen=True)
class Installed:
    cluster: ClusterNodes
    kube: Client
    sim_root: Path  # the worker's simulated host is sim_root/<node name>

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    @property
    def audit_log(self) -> Path:
        return self.cluster.dir / AUDIT_LOG

    def kubectl(self, *args: str, timeout: float = 300.0) -> str:
        return kubectl(self.kubeconfig, *args, timeout=timeout)

    def node_state(self, node: str = WORKER_NODE) -> dict[str, Any]:
        return dict(self.kube.get(SRIOV_NETWORK_NODE_STATE, node, NAMESPACE))

    def pods(self, namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
        return [dict(p) for p in self.kube.list(POD, namespace, label_selector=selector)]


@contextmanager
def _simulated_host(root: Path) -> Iterator[subprocess.Popen[str]]:
    """`python -m sriovop.sim serve` until the context ends; ready once it prints its JSON line."""
    proc = subprocess.Popen([sys.executable, "-m", "sriovop.sim", "serve", "--root", str(root),
                             "--nic", "xxv710:1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if proc.poll() is not None or not first.startswith("{"):
            raise RuntimeError(f"simulated host did not start: {first}{proc.stdout.read()}")
        json.loads(first)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def advertise_resource(kube: Client, node: str, resource: str = RESOURCE) -> bool:
    """True once the node's allocatable lists the resource (the kubelet copies capacity there)."""
    key = resource.replace("/", "~1")
    kube.patch(NODE, node, [{"op": "add", "path": f"/status/capacity/{key}", "value": "16"}],
               patch_type="json", subresource="status")
    return bool(((kube.get(NODE, node).get("status") or {}).get("allocatable") or {}).get(resource))


def _reports_intel_pf(state: dict[str, Any]) -> bool:
    return any(i.get("vendor") == "8086" for i in (state.get("status") or {}).get("interfaces") or [])


def install(directory: Path, sim_root: Path) -> Installed:
    """Start the cluster, load the images, apply the manifests and point the worker's daemon at the
    simulated host; returns once the NodeState reports the simulated PF (policies are admitted)."""
    policy = directory / "audit-policy-in.yaml"
    policy.write_text(yaml.safe_dump(audit_policy(AUDITED_USERS)))
    cluster = cluster_up(directory, 2, audit_policy=policy)
    kube = client_for(cluster.kubeconfig)
    load_archives(directory, list(build_images().values()))
    kubectl(cluster.kubeconfig, "apply", "-k", "manifests/crds")
    kubectl(cluster.kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=300s")
    kubectl(cluster.kubeconfig, "apply", "-k", "manifests/")
    for node in (CONTROL_PLANE_NODE, WORKER_NODE):
        wait_for(partial(advertise_resource, kube, node), timeout=120, what=f"{RESOURCE} allocatable on {node}",
                 interval=1)
    kube.patch(NODE, WORKER_NODE, {"metadata": {"labels": {SRIOV_CAPABLE_LABEL: "true"}}})
    env = {"SRIOVOP_SIMULATED_HOST": f"{str(sim_root).lstrip('/')}/$(NODE_NAME)"}
    # Refused until the operator has written the webhook certificates and the webhook pod serves.
    wait_for(lambda: kube.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"configDaemonEnvVars": env}}, NAMESPACE),
             timeout=INSTALL_TIMEOUT_S, what="SriovOperatorConfig default patched (webhook serving)", interval=2)
    wait_for(lambda: _reports_intel_pf(dict(kube.get(SRIOV_NETWORK_NODE_STATE, WORKER_NODE, NAMESPACE))),
             timeout=INSTALL_TIMEOUT_S, what="NodeState of the worker reports the simulated XXV710", interval=2)
    return Installed(cluster, kube, sim_root)


@contextmanager
def installed_cluster() -> Iterator[Installed]:
    """Host: this machine (real kubelets) plus the simulated SR-IOV host of sriovop-node-2."""
    directory = Path(tempfile.mkdtemp(prefix="sov-", dir="/tmp"))  # short: unix socket paths
    sim_root = SIM_BASE / f"test-{uuid.uuid4().hex[:8]}"
    sim_root.mkdir(parents=True)
    try:
        with _simulated_host(sim_root / WORKER_NODE):
            try:
                yield install(directory, sim_root)
            finally:
                cluster_down(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(sim_root, ignore_errors=True)
