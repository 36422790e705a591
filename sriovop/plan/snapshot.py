"""One read of everything the operator's policy sync, the webhook and the daemon's decision look at.

`sriovop plan` and `sriovop explain` only read: every object comes from one list/get each, and all
later work is pure functions over this snapshot.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    SRIOV_IB_NETWORK,
    SRIOV_NETWORK,
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.api.v1.schema.validate import validate_object
from sriovop.api.v1.supportednics import SupportedNics, default_supported_nics
from sriovop.plan.webhooks import Connector, PolicyWebhooks, read_policy_webhooks, tcp_connect
from sriovop.runtime.client import Reader
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, NODE, POD
from sriovop.runtime.objects import thaw

Obj = Mapping[str, Any]


class PlanInputError(ValueError):
    """A file given to `sriovop plan` cannot be used; the message names the file and document."""


@dataclass(frozen=True)
class Snapshot:
    namespace: str
    config: Obj
    policies: tuple[Obj, ...]
    nodes: tuple[Obj, ...]
    states: Mapping[str, Obj]
    pools: tuple[Obj, ...]
    nics: SupportedNics
    device_plugin: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: The webhooks the API server calls for policy writes (None: not read).
    webhooks: PolicyWebhooks | None = None
    #: SriovNetworks and SriovIBNetworks of every namespace, and the pods that request SR-IOV resources.
    networks: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    resource_prefix: str = consts.DEFAULT_RESOURCE_PREFIX

    def with_policies(self, policies: Iterable[Obj]) -> Snapshot:
        return replace(self, policies=tuple(policies))

    def policy(self, name: str) -> Obj | None:
        return next((p for p in self.policies if p["metadata"]["name"] == name), None)

    def _guess(self) -> bool:
        return bool((self.config.get("spec") or {}).get("enableOperatorWebhook"))

    @property
    def defaults_applied(self) -> bool:
        """The mutating webhook defaults every stored policy (an answering configuration covers them;
        when the configurations cannot be listed, enableOperatorWebhook)."""
        if self.webhooks is None or not self.webhooks.listed:
            return self._guess()
        return self.webhooks.runs("mutating")

    @property
    def rules_enforced(self) -> bool:
        """The validating webhook judges every policy write: its denials stop the change."""
        if self.webhooks is None or not self.webhooks.listed:
            return self._guess()
        return self.webhooks.runs("validating")


def _sriov_pods(client: Reader, prefix: str) -> tuple[Obj, ...]:
    """Pods not yet finished that request a `prefix/...` resource (they hold VFs, or will)."""
    try:
        pods = client.list(POD)
    except ApiError:
        return ()
    out = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if pod_resources(pod, prefix):
            out.append(thaw(pod))
    return tuple(out)


def pod_resources(pod: Obj, prefix: str) -> set[str]:
    """The `prefix/<name>` resources a pod's containers request or limit, as bare names."""
    names: set[str] = set()
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = container.get("resources") or {}
        for key in [*(res.get("requests") or {}), *(res.get("limits") or {})]:
            if str(key).startswith(prefix + "/"):
                names.add(str(key)[len(prefix) + 1:])
    return names


def _networks(client: Reader) -> tuple[Obj, ...]:
    out: list[Obj] = []
    for kind in (SRIOV_NETWORK, SRIOV_IB_NETWORK):
        try:
            out.extend(thaw(n) for n in client.list(kind))
        except ApiError:
            continue
    return tuple(out)


def read_snapshot(client: Reader, namespace: str, connect: Connector = tcp_connect) -> Snapshot:
    notes: list[str] = []
    try:
        config: Obj = thaw(client.get(SRIOV_OPERATOR_CONFIG, consts.DEFAULT_CONFIG_NAME, namespace))
    except NotFound:
        notes.append(f"SriovOperatorConfig {namespace}/{consts.DEFAULT_CONFIG_NAME} does not exist: the operator "
                     "writes nothing until it does; planned with its defaults")
        config = {"metadata": {"name": consts.DEFAULT_CONFIG_NAME, "namespace": namespace}, "spec": {}}
    try:
        nics = SupportedNics.from_configmap(client.get(CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, namespace),
                                            strict=False)
    except NotFound:
        notes.append(f"ConfigMap {consts.SUPPORTED_NIC_IDS_CONFIGMAP} is missing: using the built-in NIC list")
        nics = default_supported_nics()
    try:
        device_plugin = dict(client.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, namespace).get("data") or {})
    except NotFound:
        device_plugin = {}
    states = {s["metadata"]["name"]: thaw(s) for s in client.list(SRIOV_NETWORK_NODE_STATE, namespace)}
    webhooks = read_policy_webhooks(client, namespace, connect)
    prefix = os.environ.get(consts.ENV_RESOURCE_PREFIX) or consts.DEFAULT_RESOURCE_PREFIX
    return Snapshot(
        namespace=namespace, config=config,
        policies=tuple(thaw(p) for p in client.list(SRIOV_NETWORK_NODE_POLICY, namespace)),
        nodes=tuple(thaw(n) for n in client.list(NODE)), states=states,
        pools=tuple(thaw(p) for p in client.list(SRIOV_NETWORK_POOL_CONFIG, namespace)),
        nics=nics, device_plugin=device_plugin, notes=tuple(notes + list(webhooks.notes)), webhooks=webhooks,
        networks=_networks(client), pods=_sriov_pods(client, prefix), resource_prefix=prefix)


def load_policies(paths: Iterable[str | Path], namespace: str) -> list[dict[str, Any]]:
    """SriovNetworkNodePolicies from YAML/JSON files (several documents and `kind: List` allowed).

    A policy without a namespace is taken to be in the operator namespace (as `kubectl apply -n` would
    put it); anything that is not a SriovNetworkNodePolicy is an error, not silently skipped."""
    out: list[dict[str, Any]] = []
    for path in paths:
        try:
            docs = list(yaml.safe_load_all(Path(path).read_text()))
        except (OSError, yaml.YAMLError) as exc:
            raise PlanInputError(f"{path}: {exc}") from None
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            for j, item in enumerate(items or []):
                where = f"{path} document {i + 1}" + (f" item {j + 1}" if doc is not item else "")
                out.append(_policy(item, where, namespace))
    if not out:
        raise PlanInputError("no SriovNetworkNodePolicy in " + ", ".join(str(p) for p in paths))
    names = [p["metadata"]["name"] for p in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise PlanInputError(f"policy {dup[0]} is given more than once")
    return out


def _policy(item: Any, where: str, namespace: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise PlanInputError(f"{where}: not an object")
    kind, api = item.get("kind"), item.get("apiVersion")
    if kind != SRIOV_NETWORK_NODE_POLICY.kind or api != SRIOV_NETWORK_NODE_POLICY.api_version:
        raise PlanInputError(f"{where}: kind {kind!r} apiVersion {api!r}: only "
                             f"{SRIOV_NETWORK_NODE_POLICY.api_version} {SRIOV_NETWORK_NODE_POLICY.kind} can be planned")
    meta = item.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise PlanInputError(f"{where}: metadata.name is required")
    errors = validate_object(SRIOV_NETWORK_NODE_POLICY, item, unknown_fields=True)
    unknown = [e for e in errors if e.reason == "Unknown"]
    if unknown:
        raise PlanInputError(f"{where} (policy {meta['name']}): " + "; ".join(e.message for e in unknown)
                             + ": the API server's strict field validation refuses unknown fields")
    policy = copy.deepcopy(item)
    policy["metadata"].setdefault("namespace", namespace)
    if policy["metadata"]["namespace"] != namespace:
        raise PlanInputError(f"{where}: metadata.namespace {policy['metadata']['namespace']!r}: the operator only "
                             f"uses policies in its namespace {namespace!r}")
    return policy
