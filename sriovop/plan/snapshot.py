"""One read of everything the operator's policy sync, the webhook and the daemon's decision look at.

`sriovop plan` and `sriovop explain` only read: every object comes from one list/get each, and all
later work is pure functions over this snapshot.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_NETWORK_POOL_CONFIG,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.api.v1.supportednics import SupportedNics, default_supported_nics
from sriovop.runtime.client import Reader
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, MUTATING_WEBHOOK_CONFIGURATION, NODE
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
    #: A MutatingWebhookConfiguration for policies exists (None: not allowed to list them).
    mutating_webhook: bool | None = None

    def with_policies(self, policies: Iterable[Obj]) -> Snapshot:
        return replace(self, policies=tuple(policies))

    def policy(self, name: str) -> Obj | None:
        return next((p for p in self.policies if p["metadata"]["name"] == name), None)

    @property
    def webhook_enabled(self) -> bool:
        """Whether the policy-defaulting webhook runs: a MutatingWebhookConfiguration for policies exists
        (the operator's, or one deployed by hand); when that cannot be listed, enableOperatorWebhook."""
        if self.mutating_webhook is not None:
            return self.mutating_webhook
        return bool((self.config.get("spec") or {}).get("enableOperatorWebhook"))


def _mutates_policies(client: Reader) -> bool | None:
    try:
        configs = client.list(MUTATING_WEBHOOK_CONFIGURATION)
    except ApiError:
        return None
    return any(SRIOV_NETWORK_NODE_POLICY.plural in (rule.get("resources") or [])
               for cfg in configs for hook in cfg.get("webhooks") or [] for rule in hook.get("rules") or [])


def read_snapshot(client: Reader, namespace: str) -> Snapshot:
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
    return Snapshot(
        namespace=namespace, config=config,
        policies=tuple(thaw(p) for p in client.list(SRIOV_NETWORK_NODE_POLICY, namespace)),
        nodes=tuple(thaw(n) for n in client.list(NODE)), states=states,
        pools=tuple(thaw(p) for p in client.list(SRIOV_NETWORK_POOL_CONFIG, namespace)),
        nics=nics, device_plugin=device_plugin, notes=tuple(notes), mutating_webhook=_mutates_policies(client))


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
    policy = copy.deepcopy(item)
    policy["metadata"].setdefault("namespace", namespace)
    if policy["metadata"]["namespace"] != namespace:
        raise PlanInputError(f"{where}: metadata.namespace {policy['metadata']['namespace']!r}: the operator only "
                             f"uses policies in its namespace {namespace!r}")
    return policy
