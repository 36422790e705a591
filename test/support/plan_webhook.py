"""The operator's policy webhooks registered for one plan cluster's namespace (test.support.plan_cluster):
the real webhook server in-process over TLS, called by the real API server through a Validating- and a
MutatingWebhookConfiguration whose namespaceSelector matches only that namespace (the control plane is
shared with other suites). Also a configuration whose endpoint refuses connections, for the
unreachable-webhook cases."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.devcluster import ControlPlane
from sriovop.devcluster.process import free_port
from sriovop.render.webhook_configs import Endpoint, FailurePolicy, operator_webhook_configs
from sriovop.runtime import kinds as core
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.webhook.cluster_view import ClientClusterView, SupportedNicSource, configmap_fetcher
from sriovop.webhook.settings import WebhookSettings
from test.support.plan_cluster import Cluster
from test.support.webhook_server import running_webhook

LABEL = "sriovop-plan-webhook"


def label_namespace(c: Cluster) -> dict[str, Any]:
    """The namespace carries LABEL=<its name>; returns the matching namespaceSelector."""
    ns = c.client.get(core.NAMESPACE, c.namespace)
    ns["metadata"].setdefault("labels", {})[LABEL] = c.namespace
    c.client.update(core.NAMESPACE, ns)
    return {"matchLabels": {LABEL: c.namespace}}


@contextlib.contextmanager
def _registered(c: Cluster, endpoint: Endpoint, name: str, failure_policy: FailurePolicy,
                mutating: bool = True) -> Iterator[None]:
    validating_cfg, mutating_cfg = operator_webhook_configs(endpoint, name=name, failure_policy=failure_policy,
                                                            namespace_selector=label_namespace(c))
    made = [(core.VALIDATING_WEBHOOK_CONFIGURATION, validating_cfg)]
    if mutating:
        made.append((core.MUTATING_WEBHOOK_CONFIGURATION, mutating_cfg))
    try:
        for kind, obj in made:
            c.client.create(kind, obj)
        yield
    finally:
        for kind, obj in made:
            with contextlib.suppress(NotFound):
                c.client.delete(kind, obj["metadata"]["name"])


def _probe(c: Cluster, num_vfs: int, selector: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": SRIOV_NETWORK_NODE_POLICY.api_version, "kind": SRIOV_NETWORK_NODE_POLICY.kind,
            "metadata": {"name": "webhook-probe", "namespace": c.namespace},
            "spec": {"resourceName": "probe", "numVfs": num_vfs, "nicSelector": {"pfNames": ["ens1f0"]},
                     "nodeSelector": selector}}


def _wait_active(c: Cluster, selector: dict[str, str], timeout: float = 60.0) -> None:
    """Until the API server calls both webhooks (it loads configurations asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        mutated = validated = False
        with contextlib.suppress(ApiError):
            out = c.client.create(SRIOV_NETWORK_NODE_POLICY, _probe(c, 2, selector), dry_run=True)
            mutated = (out.get("spec") or {}).get("priority") == 99
        try:
            c.client.create(SRIOV_NETWORK_NODE_POLICY, _probe(c, 0, selector), dry_run=True)
        except ApiError as exc:
            validated = "numVfs" in str(exc)
        if mutated and validated:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"policy webhooks not active after {timeout}s (mutating={mutated}, "
                               f"validating={validated})")
        time.sleep(0.2)


@contextlib.contextmanager
def policy_webhook(cp: ControlPlane, c: Cluster, selector: dict[str, str]) -> Iterator[None]:
    """The webhook enforces the policy rules and defaults policies in the cluster's namespace."""
    view = ClientClusterView(c.client, c.namespace,
                             SupportedNicSource(configmap_fetcher(c.client, c.namespace), ttl=0.5))
    serving = cp.issue_serving_cert(["127.0.0.1"])
    with running_webhook(view, WebhookSettings(namespace=c.namespace), serving, cp.ca_pem) as hook, \
            _registered(c, Endpoint.url(hook.url, cp.ca_pem), f"plan-{c.namespace}", "Fail"):
        _wait_active(c, selector)
        yield


@contextlib.contextmanager
def unreachable_webhook(cp: ControlPlane, c: Cluster, failure_policy: FailurePolicy) -> Iterator[None]:
    """A validating configuration for policies whose endpoint refuses connections."""
    endpoint = Endpoint.url(f"https://127.0.0.1:{free_port()}", cp.ca_pem)
    with _registered(c, endpoint, f"plan-down-{c.namespace}", failure_policy, mutating=False):
        yield
