"""A webhook registered with the real API server, confined to this test run's namespaces.

Webhook configurations are cluster-scoped and the control plane is shared with other suites, so every
configuration here has its own name and a namespaceSelector on a label only our namespaces carry.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sriovop.api.v1 import kinds
from sriovop.devcluster import ControlPlane
from sriovop.render.webhook_configs import Endpoint, injector_webhook_config, operator_webhook_configs
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.webhook.cluster_view import ClientClusterView, SupportedNicSource, configmap_fetcher
from sriovop.webhook.control_switches import ControlSwitches
from sriovop.webhook.settings import WebhookSettings
from sriovop.webhook.switches_source import WatchedSwitches
from test.support.webhook_objects import SUPPORTED_NIC_DATA, intel_xxv710, mellanox_cx6, node_state
from test.support.webhook_server import Running, running_webhook

RUN_LABEL = "sriovop-webhook-test"


@dataclass
class WebhookCluster:
    client: Client
    run: str
    operator_ns: str
    apps_ns: str
    node_names: list[str]
    hook: Running
    switches: WatchedSwitches
    config_names: list[tuple[Any, str]] = field(default_factory=list)

    @property
    def node_selector(self) -> dict[str, str]:
        return {f"{RUN_LABEL}/run": self.run}

    def policy(self, name: str, **spec: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"resourceName": "intelnics", "nodeSelector": self.node_selector, "numVfs": 4,
                                "nicSelector": {"pfNames": ["ens1f1"]}}
        body.update(spec)
        return {"apiVersion": kinds.API_VERSION, "kind": "SriovNetworkNodePolicy",
                "metadata": {"name": name, "namespace": self.operator_ns}, "spec": body}


def _create_namespace(client: Client, name: str, run: str) -> None:
    client.create(core.NAMESPACE, {"metadata": {"name": name, "labels": {RUN_LABEL: run}}})


def _write_node_states(client: Client, ns: str, nodes: list[str]) -> None:
    for i, name in enumerate(nodes):
        ifaces = [intel_xxv710(alt_names=["enp59s0f0"], numvfs=8), intel_xxv710("ens1f1", "0000:3b:00.1"),
                  mellanox_cx6()]
        if i == 1:
            ifaces.append({"name": "eth7", "pciAddress": "0000:07:00.0", "vendor": "1234", "deviceID": "5678",
                           "totalvfs": 8, "numVfs": 0, "mtu": 1500, "linkType": "ETH"})
        state = node_state(name, ifaces, namespace=ns)
        status = state.pop("status")
        created = client.create(kinds.SRIOV_NETWORK_NODE_STATE, state)
        created["status"] = status
        client.update_status(kinds.SRIOV_NETWORK_NODE_STATE, created)


def _wait_active(client: Client, wc: WebhookCluster, timeout: float = 30.0) -> None:
    """Until both operator webhooks act on a dry-run create (the API server loads configs async)."""
    deadline = time.monotonic() + timeout
    probe = wc.policy("probe", numVfs=4)
    bad = wc.policy("probe", numVfs=0)
    while True:
        mutated = validated = False
        try:
            out = client.create(kinds.SRIOV_NETWORK_NODE_POLICY, probe, dry_run=True)
            mutated = out["spec"].get("priority") == 99
        except ApiError:
            pass
        try:
            client.create(kinds.SRIOV_NETWORK_NODE_POLICY, bad, dry_run=True)
        except ApiError as exc:
            validated = "numVfs(0)" in str(exc.message)
        if mutated and validated:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"webhooks not active after {timeout}s (mutating={mutated}, validating={validated})")
        time.sleep(0.2)


@contextlib.contextmanager
def webhook_cluster(cp: ControlPlane, nic_ttl: float = 0.5) -> Iterator[WebhookCluster]:
    run = uuid.uuid4().hex[:8]
    client = Client(load_config(str(cp.kubeconfig)))
    operator_ns, apps_ns = f"wh-op-{run}", f"wh-apps-{run}"
    node_names = [f"wh-{run}-worker-{i}" for i in range(2)]
    configs: list[tuple[Any, str]] = []
    created_nodes: list[str] = []
    stops: list[Callable[[], None]] = []
    try:
        for ns in (operator_ns, apps_ns):
            _create_namespace(client, ns, run)
        client.create(core.SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": apps_ns}})
        client.create(core.CONFIG_MAP, {"metadata": {"name": "supported-nic-ids", "namespace": operator_ns},
                                        "data": dict(SUPPORTED_NIC_DATA)})
        for name in node_names:
            client.create(core.NODE, {"metadata": {"name": name, "labels": {
                f"{RUN_LABEL}/run": run, "node-role.kubernetes.io/worker": ""}}})
            created_nodes.append(name)
        _write_node_states(client, operator_ns, node_names)
        settings = WebhookSettings(namespace=operator_ns)
        view = ClientClusterView(client, operator_ns,
                                 SupportedNicSource(configmap_fetcher(client, operator_ns), ttl=nic_ttl))
        serving = cp.issue_serving_cert(["127.0.0.1"])
        switches = WatchedSwitches(client, operator_ns, ControlSwitches())
        stops.append(switches.stop)
        if not switches.start(timeout=60.0):
            raise TimeoutError("the webhook's nri-control-switches watch did not sync")
        with running_webhook(view, settings, serving, cp.ca_pem, switches=switches) as hook:
            wc = WebhookCluster(client, run, operator_ns, apps_ns, node_names, hook, switches, configs)
            endpoint = Endpoint.url(hook.url, cp.ca_pem)
            selector = {"matchLabels": {RUN_LABEL: run}}
            validating, mutating = operator_webhook_configs(
                endpoint, name=f"sriov-operator-webhook-config-{run}", namespace_selector=selector)
            injector = injector_webhook_config(
                endpoint, name=f"network-resources-injector-config-{run}", namespace_selector=selector)
            for kind, obj in ((core.VALIDATING_WEBHOOK_CONFIGURATION, validating),
                              (core.MUTATING_WEBHOOK_CONFIGURATION, mutating),
                              (core.MUTATING_WEBHOOK_CONFIGURATION, injector)):
                client.create(kind, obj)
                configs.append((kind, obj["metadata"]["name"]))
            _wait_active(client, wc)
            yield wc
    finally:
        for stop in stops:
            stop()
        for kind, name in configs:
            with contextlib.suppress(NotFound):
                client.delete(kind, name)
        for name in created_nodes:
            with contextlib.suppress(NotFound):
                client.delete(core.NODE, name)
        for ns in (operator_ns, apps_ns):
            with contextlib.suppress(NotFound):
                client.delete(core.NAMESPACE, ns)
        client.close()


