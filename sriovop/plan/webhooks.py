"""Which admission webhooks the API server calls for a SriovNetworkNodePolicy write, and whether they
can answer.

Plan has two modes, and this module decides which one holds:
- enforced: a ValidatingWebhookConfiguration covers policy writes in the operator namespace and its
  endpoint answers. The policy rules' verdict is what the API server will say; a denial stops the
  change (and the defaults apply when a MutatingWebhookConfiguration covers policies too);
- not enforced: no configuration covers policies (`enableOperatorWebhook: false`), or one exists but
  cannot be reached and its failurePolicy is Ignore. The API server stores every policy its schema
  accepts, so the would-be denials are only warnings, and the operator applies those policies.
A configuration that cannot be reached with failurePolicy Fail refuses every policy write.

Reachability is judged without writing anything: a Service-backed webhook needs the Service and a
ready endpoint; a URL-backed one needs its host and port to accept a TCP connection.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY
from sriovop.api.v1.selectors import LabelSelectorError, label_selector_matches
from sriovop.runtime.client import Reader
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import (
    MUTATING_WEBHOOK_CONFIGURATION,
    NAMESPACE,
    SERVICE,
    VALIDATING_WEBHOOK_CONFIGURATION,
    Kind,
)

ENDPOINTS = Kind("", "v1", "Endpoints", "endpoints")

Obj = Mapping[str, Any]
#: (host, port, timeout) -> None, raising OSError when nothing accepts the connection.
Connector = Callable[[str, int, float], None]


@dataclass(frozen=True)
class PolicyWebhook:
    """One webhook of a configuration that the API server calls for policy CREATE/UPDATE."""

    configuration: str
    name: str
    kind: str  # validating | mutating
    failure_policy: str  # Fail | Ignore
    target: str  # service ns/name:port/path, or the URL
    #: Why it cannot answer ("" when it can).
    problem: str = ""

    @property
    def reachable(self) -> bool:
        return not self.problem

    def to_json(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "name": self.name, "kind": self.kind,
                "failurePolicy": self.failure_policy, "target": self.target, "reachable": self.reachable,
                "problem": self.problem, "whenUnreachable": when_unreachable(self)}


def when_unreachable(hook: PolicyWebhook) -> str:
    """What the API server does with a policy write while this webhook cannot answer."""
    if hook.failure_policy == "Ignore":
        what = "checks" if hook.kind == "validating" else "defaults"
        return f"failurePolicy Ignore: the API server stores the policy without the webhook's {what}"
    return "failurePolicy Fail: the API server refuses every policy write until the webhook answers"


@dataclass(frozen=True)
class PolicyWebhooks:
    """Every webhook for policy writes in the namespace; `listed` False when the configurations could
    not be listed (then the SriovOperatorConfig's enableOperatorWebhook is the best guess)."""

    hooks: tuple[PolicyWebhook, ...] = ()
    listed: bool = True
    notes: tuple[str, ...] = field(default_factory=tuple)

    def of(self, kind: str) -> list[PolicyWebhook]:
        return [h for h in self.hooks if h.kind == kind]

    def runs(self, kind: str) -> bool:
        """A webhook of this kind answers for policy writes (unreachable ones with failurePolicy Ignore
        are skipped by the API server; unreachable ones with Fail refuse writes, `refuses_writes`)."""
        return any(h.reachable for h in self.of(kind))

    def refuses_writes(self) -> list[PolicyWebhook]:
        """Unreachable webhooks whose failurePolicy Fail makes the API server refuse policy writes."""
        return [h for h in self.hooks if not h.reachable and h.failure_policy != "Ignore"]


def _covers_policies(rule: Obj) -> bool:
    groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
    operations = rule.get("operations") or []
    return (("*" in groups or SRIOV_NETWORK_NODE_POLICY.group in groups)
            and ("*" in resources or "*/*" in resources or SRIOV_NETWORK_NODE_POLICY.plural in resources)
            and ("*" in operations or "CREATE" in operations or "UPDATE" in operations))


def _target(client_config: Obj) -> str:
    if client_config.get("url"):
        return str(client_config["url"])
    svc = client_config.get("service") or {}
    return f"service {svc.get('namespace')}/{svc.get('name')}:{svc.get('port') or 443}{svc.get('path') or ''}"


def tcp_connect(host: str, port: int, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


def _problem(reader: Reader, client_config: Obj, connect: Connector) -> str:
    url = client_config.get("url")
    if url:
        parts = urlsplit(str(url))
        host, port = parts.hostname or "", parts.port or 443
        try:
            connect(host, port, 3.0)
        except OSError as exc:
            return f"{host}:{port} does not accept connections ({exc.strerror or exc})"
        return ""
    svc = client_config.get("service") or {}
    name, namespace = str(svc.get("name") or ""), str(svc.get("namespace") or "")
    try:
        reader.get(SERVICE, name, namespace)
    except NotFound:
        return f"Service {namespace}/{name} does not exist"
    except ApiError:
        return ""  # not allowed to look: assume it answers
    try:
        endpoints = reader.get(ENDPOINTS, name, namespace)
    except NotFound:
        return f"Service {namespace}/{name} has no endpoints"
    except ApiError:
        return ""
    ready = [a for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
    if not ready:
        waiting = sum(len(s.get("notReadyAddresses") or []) for s in endpoints.get("subsets") or [])
        return (f"Service {namespace}/{name} has no ready endpoint"
                + (f" ({waiting} not ready: the webhook pods are failing their readiness probe)" if waiting else ""))
    return ""


def _namespace_labels(reader: Reader, namespace: str) -> Mapping[str, str] | None:
    try:
        return dict((reader.get(NAMESPACE, namespace).get("metadata") or {}).get("labels") or {})
    except ApiError:
        return None


def read_policy_webhooks(reader: Reader, namespace: str, connect: Connector = tcp_connect) -> PolicyWebhooks:
    configs: list[tuple[str, Obj]] = []
    for api_kind, label in ((VALIDATING_WEBHOOK_CONFIGURATION, "validating"),
                            (MUTATING_WEBHOOK_CONFIGURATION, "mutating")):
        try:
            configs.extend((label, c) for c in reader.list(api_kind))
        except ApiError as exc:
            note = (f"cannot list {api_kind.kind}s ({exc}): whether a webhook checks policies is guessed from "
                    "enableOperatorWebhook")
            return PolicyWebhooks(listed=False, notes=(note,))
    labels = _namespace_labels(reader, namespace)
    labels_with_name = {**(labels or {}), "kubernetes.io/metadata.name": namespace}
    hooks: list[PolicyWebhook] = []
    for kind, cfg in configs:
        for hook in cfg.get("webhooks") or []:
            if not any(_covers_policies(r) for r in hook.get("rules") or []):
                continue
            try:
                if labels is not None and not label_selector_matches(hook.get("namespaceSelector"), labels_with_name):
                    continue
            except LabelSelectorError:
                continue
            client_config = hook.get("clientConfig") or {}
            hooks.append(PolicyWebhook(
                configuration=str(cfg["metadata"]["name"]), name=str(hook.get("name") or ""), kind=kind,
                failure_policy=str(hook.get("failurePolicy") or "Fail"), target=_target(client_config),
                problem=_problem(reader, client_config, connect)))
    return PolicyWebhooks(tuple(hooks))


def describe(hooks: Sequence[PolicyWebhook]) -> str:
    return ", ".join(f"{h.kind} webhook {h.name} of {h.configuration} ({h.target})" for h in hooks)
