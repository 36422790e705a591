"""The RBAC proof's flow: the least-privilege demo, then the code paths the demo alone does not reach.

Each step is done by the platform engineer (admin client) and waits for the components (running as
their ServiceAccounts) to react; `Timeline` remembers when each step started so that every audited
request can be attributed to the step that caused it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    NETWORK_ATTACHMENT_DEFINITION,
    OVS_NETWORK,
    SRIOV_IB_NETWORK,
    SRIOV_NETWORK,
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.controllers.pool_config import REASON_POOL_CONFLICT
from sriovop.render import workloads
from sriovop.render.webhook_configs import Endpoint, injector_webhook_config
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import (
    DAEMON_SET,
    EVENT,
    MUTATING_WEBHOOK_CONFIGURATION,
    NODE,
    POD,
    SECRET,
    SERVICE,
    VALIDATING_WEBHOOK_CONFIGURATION,
    Kind,
)
from test.support.daemon_deviceplugin import FakeDevicePluginSet
from test.support.kubelet import FakeKubelet, mark_running
from test.support.poll import wait_for

NS = consts.DEFAULT_OPERATOR_NAMESPACE
WORKLOAD_NS = "default"


@dataclass
class Timeline:
    marks: list[tuple[datetime, str]] = field(default_factory=list)

    def mark(self, step: str) -> None:
        self.marks.append((datetime.now(UTC), step))

    def say(self, message: str) -> None:
        """The demo's progress callback. The demo reports each phase when it is done, so requests that
        follow a message belong to the phase after it."""
        self.mark(f"demo, after '{message.split('] ', 1)[-1]}'")

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.mark(name)
        yield

    def step_at(self, at: datetime) -> str:
        current = "(before the demo started)"
        for when, name in self.marks:
            if when > at:
                break
            current = name
        return current


def _exists(client: Client, kind: Kind, name: str, namespace: str | None = None) -> bool:
    try:
        client.get(kind, name, namespace)
        return True
    except NotFound:
        return False


def _present(client: Client, kind: Kind, name: str, namespace: str | None) -> Callable[[], bool]:
    return lambda: _exists(client, kind, name, namespace)


def _absent(client: Client, kind: Kind, name: str, namespace: str | None) -> Callable[[], bool]:
    return lambda: not _exists(client, kind, name, namespace)


def _settled(client: Client, node: str, num_vfs: int) -> Callable[[], bool]:
    return lambda: _node_settled(client, node, num_vfs)


def _node_settled(client: Client, node: str, num_vfs: int) -> bool:
    state = client.get(SRIOV_NETWORK_NODE_STATE, node, NS)
    ann = state["metadata"].get("annotations") or {}
    status = state.get("status") or {}
    ifaces = [i for i in status.get("interfaces") or [] if i.get("vendor") == "8086"]
    return (status.get("syncStatus") == "Succeeded"
            and ann.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) == consts.DRAIN_IDLE
            and ann.get(consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
            and bool(ifaces) and all(int(i.get("numVfs") or 0) == num_vfs for i in ifaces))


def drain_with_a_workload(client: Client, timeline: Timeline, webhook_url: str, ca_pem: bytes,
                          nodes: list[str]) -> None:
    """A pod on the first node (admitted by the injector, which reads its NAD), then a policy change
    that needs a drain on every node: cordon, evict, annotations, uncordon."""
    with timeline.step("register the injector by URL and create a workload pod on " + nodes[0]):
        config = injector_webhook_config(Endpoint.url(webhook_url, ca_pem), name="rbac-proof-injector")
        client.create(MUTATING_WEBHOOK_CONFIGURATION, config)
        time.sleep(1.0)  # the API server's webhook registry follows the configuration through a watch
        pod = client.create(POD, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "rbac-proof-workload", "namespace": WORKLOAD_NS,
                         "annotations": {"k8s.v1.cni.cncf.io/networks": "demo-net"}},
            "spec": {"nodeName": nodes[0], "containers": [{"name": "c", "image": "busybox"}]}}, WORKLOAD_NS)
        resources = pod["spec"]["containers"][0].get("resources") or {}
        assert any("intelnics" in key for key in resources.get("requests") or {}), \
            f"the injector did not add the network's resource: {resources}"
        mark_running(client, pod)
    with FakeKubelet(client, namespace=WORKLOAD_NS) as kubelet:
        with timeline.step("policy numVfs 8 -> 4: drain every node (evicts the workload), reconfigure"):
            policy = client.get(SRIOV_NETWORK_NODE_POLICY, "demo-intel-netdevice", NS)
            client.patch(SRIOV_NETWORK_NODE_POLICY, "demo-intel-netdevice", {"spec": {"numVfs": 4}}, NS)
            assert policy["spec"]["numVfs"] == 8
            wait_for(lambda: not _exists(client, POD, "rbac-proof-workload", WORKLOAD_NS), 120,
                     "the workload pod is evicted")
            for node in nodes:
                wait_for(_settled(client, node, 4), 120, f"{node} reconfigured to 4 VFs and idle")
        assert kubelet.finalized == [f"{WORKLOAD_NS}/rbac-proof-workload"], kubelet.errors


def _device_plugin_marked(client: Client, dps: FakeDevicePluginSet) -> bool:
    """The current init container has marked its pod: the mark is on the pod now, or the process has
    already exited 0, which it does only after its mark was set and then removed (the daemon's steady
    state releases a marked pod on a configured node at its next drift check, which can come before
    this look). A process that failed ends the wait with its log."""
    run = dps.current()
    if run is None:
        return False
    code = run.proc.poll()
    if code is not None:
        if code != 0:
            raise AssertionError(f"the init container exited {code}:\n{run.log_text()}")
        return True
    pod = client.get(POD, run.pod, NS)
    return consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION in (pod["metadata"].get("annotations") or {})


def device_plugin_blocked_until_configured(client: Client, timeline: Timeline, device_plugin_kubeconfig: Path,
                                           log_dir: Path, nodes: list[str]) -> None:
    """blockDevicePluginUntilConfigured (on by default): a device-plugin pod on the first node whose
    init container (`sriovop wait-for-config` as the device plugin's ServiceAccount) marks its pod and
    waits; a policy change makes that node's daemon delete the pod, apply, and unblock the replacement.
    The flow plays the DaemonSet controller and the kubelet (no controller-manager or kubelet here)."""
    with FakeDevicePluginSet(client, NS, nodes[0], device_plugin_kubeconfig, log_dir, init=True) as dps:
        with timeline.step(f"a device-plugin pod on {nodes[0]}: its init container marks it and waits"):
            wait_for(lambda: _device_plugin_marked(client, dps), 150, "the init container's wait mark")
            first = dps.current()
        with timeline.step("policy numVfs 4 -> 6: the daemon restarts the device plugin around the apply "
                           "and unblocks the replacement"):
            client.patch(SRIOV_NETWORK_NODE_POLICY, "demo-intel-netdevice", {"spec": {"numVfs": 6}}, NS)
            for node in nodes:
                wait_for(_settled(client, node, 6), 120, f"{node} reconfigured to 6 VFs and idle")

            def unblocked() -> bool:
                run = dps.current()
                return run is not None and run is not first and run.proc.poll() is not None

            wait_for(unblocked, 120, "the replacement's init container exits")
        last = dps.current()
        # Judged by the pod's deletion, not by `killed`: on a busy machine the first init process can see its
        # pod gone and exit on its own before this fake kubelet's next look, which then has nothing to kill.
        assert first is not None and first.uid in {uid for uid, _ in dps.deleted}, \
            "the pod seen before the apply was not deleted"
        assert last is not None
        assert last.proc.returncode == 0, last.log_text()
        assert dps.errors == [], dps.errors


def networks_lifecycle(client: Client, timeline: Timeline) -> None:
    """One network of each kind with its NAD beside it (owner references), an update, deletions."""
    specs: list[tuple[Kind, dict[str, Any]]] = [
        (SRIOV_NETWORK, {"resourceName": "intelnics", "vlan": 10}),
        (SRIOV_IB_NETWORK, {"resourceName": "mlx_ib", "linkState": "enable"}),
        (OVS_NETWORK, {"resourceName": "mlx_switchdev", "bridge": "br-test", "vlan": 20}),
    ]
    name = "rbac-proof-net"
    with timeline.step("create a SriovNetwork, a SriovIBNetwork and an OVSNetwork (NADs in the operator namespace)"):
        for kind, spec in specs:
            client.create(kind, {"apiVersion": kind.api_version, "kind": kind.kind,
                                 "metadata": {"name": f"{name}-{kind.plural}", "namespace": NS}, "spec": spec}, NS)
        for kind, _ in specs:
            wait_for(_present(client, NETWORK_ATTACHMENT_DEFINITION,
                                                            f"{name}-{kind.plural}", NS), 90, f"NAD of the {kind.kind}")
    with timeline.step("change the SriovNetwork's VLAN: the NAD is updated"):
        client.patch(SRIOV_NETWORK, f"{name}-{SRIOV_NETWORK.plural}", {"spec": {"vlan": 11}}, NS)
        wait_for(lambda: '"vlan":11' in client.get(
            NETWORK_ATTACHMENT_DEFINITION, f"{name}-{SRIOV_NETWORK.plural}", NS)["spec"]["config"].replace(" ", ""),
            90, "the NAD carries VLAN 11")
    with timeline.step("delete the three networks: NADs deleted, finalizers removed"):
        for kind, _ in specs:
            client.delete(kind, f"{name}-{kind.plural}", NS)
        for kind, _ in specs:
            wait_for(_absent(client, kind, f"{name}-{kind.plural}", NS), 90, f"the {kind.kind} is gone")
            assert not _exists(client, NETWORK_ATTACHMENT_DEFINITION, f"{name}-{kind.plural}", NS)


def pool_config_lifecycle(client: Client, timeline: Timeline) -> None:
    name = "rbac-proof-hwol"
    with timeline.step("create a hardware-offload SriovNetworkPoolConfig (finalizer added)"):
        client.create(SRIOV_NETWORK_POOL_CONFIG, {
            "apiVersion": SRIOV_NETWORK_POOL_CONFIG.api_version, "kind": SRIOV_NETWORK_POOL_CONFIG.kind,
            "metadata": {"name": name, "namespace": NS},
            "spec": {"ovsHardwareOffloadConfig": {"name": "mcp-offloading"}}}, NS)
        wait_for(lambda: consts.POOL_CONFIG_FINALIZER in (
            client.get(SRIOV_NETWORK_POOL_CONFIG, name, NS)["metadata"].get("finalizers") or []),
            90, "the pool-config finalizer")
    with timeline.step("delete the pool config (finalizer removed)"):
        client.delete(SRIOV_NETWORK_POOL_CONFIG, name, NS)
        wait_for(lambda: not _exists(client, SRIOV_NETWORK_POOL_CONFIG, name, NS), 90, "the pool config is gone")


def stale_node_state(client: Client, timeline: Timeline) -> None:
    """A worker Node without a daemon gets a NodeState; once the Node is deleted the NodeState goes
    (STALE_NODE_STATE_CLEANUP_DELAY_MINUTES=0 in this run)."""
    name = "rbac-proof-node"
    with timeline.step("add a worker Node (the operator creates its NodeState)"):
        client.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
            "node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name}}})
        wait_for(lambda: _exists(client, SRIOV_NETWORK_NODE_STATE, name, NS), 90, "its NodeState")
    with timeline.step("delete that Node (its NodeState is deleted as stale)"):
        client.delete(NODE, name)
        wait_for(lambda: not _exists(client, SRIOV_NETWORK_NODE_STATE, name, NS), 90, "the stale NodeState is gone")


def _config_daemon_reverted(client: Client) -> bool:
    ds = client.get(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, NS)
    return (ds["metadata"].get("annotations") or {}).get("release.openshift.io/version") != "tampered"


def webhooks_enabled_and_repaired(client: Client, timeline: Timeline) -> None:
    """enableOperatorWebhook/enableInjector on: the operator deploys both webhooks (DaemonSets,
    Services, admission configurations, self-managed certificate Secrets with the CA in caBundle);
    then objects changed behind its back are put back.
    Last SR-IOV write of the flow: the rendered configurations point at in-cluster Services that do not
    exist here, and the operator webhook fails closed."""
    with timeline.step("enable both webhooks in SriovOperatorConfig default"):
        client.patch(SRIOV_OPERATOR_CONFIG, consts.DEFAULT_CONFIG_NAME,
                     {"spec": {"enableOperatorWebhook": True, "enableInjector": True}}, NS)
        for kind, obj_name, ns in (
            (DAEMON_SET, workloads.OPERATOR_WEBHOOK_NAME, NS), (DAEMON_SET, workloads.INJECTOR_NAME, NS),
            (SECRET, "sriov-network-operator-webhook-ca", NS), (SECRET, "operator-webhook-cert", NS),
            (SECRET, "network-resources-injector-cert", NS),
            (SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, NS), (SERVICE, workloads.INJECTOR_SERVICE, NS),
            (VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME, None),
            (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME, None),
            (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME, None),
        ):
            wait_for(_present(client, kind, obj_name, ns), 90, f"{kind.kind} {obj_name}")
        wait_for(lambda: all(
            hook["clientConfig"].get("caBundle") for kind, name in (
                (VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
                (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
                (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME))
            for hook in client.get(kind, name)["webhooks"]), 90, "the CA in caBundle")
    with timeline.step("change a webhook certificate Secret, the webhook DaemonSet and Service and the "
                       "config-daemon DaemonSet behind the operator"):
        client.patch(SECRET, "operator-webhook-cert", {"data": {"tls.key": "anVuaw=="}}, NS)
        client.patch(DAEMON_SET, workloads.OPERATOR_WEBHOOK_NAME,
                     {"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}}}, NS)
        client.patch(SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, {"metadata": {"labels": {"app": "tampered"}}}, NS)
        ds = client.get(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, NS)
        annotations = copy.deepcopy(ds["metadata"].get("annotations") or {})
        annotations["release.openshift.io/version"] = "tampered"
        client.patch(DAEMON_SET, workloads.CONFIG_DAEMON_NAME, {"metadata": {"annotations": annotations}}, NS)
        wait_for(lambda: _config_daemon_reverted(client), 90, "the DaemonSet is put back")
        wait_for(lambda: client.get(
            DAEMON_SET, workloads.OPERATOR_WEBHOOK_NAME, NS)["spec"]["updateStrategy"]["rollingUpdate"][
            "maxUnavailable"] == "33%", 90, "the webhook DaemonSet is put back")
        wait_for(lambda: client.get(
            SECRET, "operator-webhook-cert", NS)["data"]["tls.key"] != "anVuaw==",
            90, "the certificate Secret is repaired")
        wait_for(lambda: client.get(SERVICE, workloads.OPERATOR_WEBHOOK_SERVICE, NS)[
            "metadata"]["labels"]["app"] == workloads.OPERATOR_WEBHOOK_NAME, 90, "the Service is put back")


def _pool(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": SRIOV_NETWORK_POOL_CONFIG.api_version, "kind": SRIOV_NETWORK_POOL_CONFIG.kind,
            "metadata": {"name": name, "namespace": NS},
            "spec": {"maxUnavailable": 1, "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": node}}}}


def conflicting_pools(client: Client, timeline: Timeline, node: str) -> None:
    """Two pools select one node: each pool reconcile warns on its NodeState; a repeat of the same
    warning bumps the Event's count (a patch) instead of creating another."""
    names = ("rbac-proof-pool-a", "rbac-proof-pool-b")
    with timeline.step(f"two SriovNetworkPoolConfigs select {node}: repeated PoolConflict warnings"):
        for name in names:
            client.create(SRIOV_NETWORK_POOL_CONFIG, _pool(name, node), NS)
        deadline = time.monotonic() + 60
        bump = 0
        while not any(e.get("reason") == REASON_POOL_CONFLICT and (e.get("count") or 0) >= 2
                      and e["involvedObject"].get("name") == node for e in client.list(EVENT, NS)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no repeated {REASON_POOL_CONFLICT} Event on {node} within 60s")
            bump += 1  # each change of a pool makes the operator reconcile it and warn again
            client.patch(SRIOV_NETWORK_POOL_CONFIG, names[1], {"metadata": {"labels": {"bump": str(bump)}}}, NS)
            time.sleep(0.5)
        # The status controller's write (its own debounced pass) must come before the deletion, or
        # whether the flow used the pool-status grant would depend on timing.
        for name in names:
            wait_for(lambda n=name: bool(
                (client.get(SRIOV_NETWORK_POOL_CONFIG, n, NS).get("status") or {}).get("conditions")),
                90, f"pool {name}'s status conditions")
    with timeline.step("delete the two pools"):
        for name in names:
            client.delete(SRIOV_NETWORK_POOL_CONFIG, name, NS)
        for name in names:
            wait_for(_absent(client, SRIOV_NETWORK_POOL_CONFIG, name, NS), 90, f"pool {name} is gone")
