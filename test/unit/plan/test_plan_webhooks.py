"""Which webhooks the API server calls for policy writes in a namespace, and whether they can answer
(`sriovop.plan.webhooks`), over an in-memory reader. Host: none."""

from __future__ import annotations

from typing import Any

from sriovop.plan.webhooks import read_policy_webhooks
from sriovop.render.webhook_configs import Endpoint, operator_webhook_configs
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import (
    MUTATING_WEBHOOK_CONFIGURATION,
    NAMESPACE,
    VALIDATING_WEBHOOK_CONFIGURATION,
    Kind,
)


class Reader:
    def __init__(self, objects: dict[tuple[str, str, str], dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return self.objects[(kind.kind, namespace or "", name)]
        except KeyError:
            raise NotFound(404, f"{kind.kind} {name} not found") from None

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Any = None,
             field_selector: Any = None) -> list[Any]:
        return [o for (k, _ns, _n), o in self.objects.items() if k == kind.kind]


def _cluster(endpoint: Endpoint, selector: dict[str, Any] | None = None, failure: str = "Fail",
             **extra: dict[str, Any]) -> Reader:
    validating, mutating = operator_webhook_configs(endpoint, name="sriov-operator-webhook-config",
                                                    failure_policy=failure,  # type: ignore[arg-type]
                                                    namespace_selector=selector)
    objects = {(VALIDATING_WEBHOOK_CONFIGURATION.kind, "", "v"): validating,
               (MUTATING_WEBHOOK_CONFIGURATION.kind, "", "m"): mutating,
               (NAMESPACE.kind, "", "op"): {"metadata": {"name": "op", "labels": {"team": "net"}}}}
    for key, obj in extra.items():
        kind, ns, name = key.split("__")
        objects[(kind, ns, name)] = obj
    return Reader(objects)


SVC = Endpoint.service("operator-webhook-service", "op", ca_bundle=b"ca")


def test_a_service_with_a_ready_endpoint_answers() -> None:
    reader = _cluster(SVC, **{"Service__op__operator-webhook-service": {"metadata": {}},
                              "Endpoints__op__operator-webhook-service": {"subsets": [
                                  {"addresses": [{"ip": "10.0.0.1"}]}]}})
    hooks = read_policy_webhooks(reader, "op")
    assert {h.kind for h in hooks.hooks} == {"validating", "mutating"}
    assert hooks.runs("validating") and hooks.runs("mutating") and not hooks.refuses_writes()


def test_a_service_whose_pods_are_not_ready_is_failing() -> None:
    reader = _cluster(SVC, **{"Service__op__operator-webhook-service": {"metadata": {}},
                              "Endpoints__op__operator-webhook-service": {"subsets": [
                                  {"notReadyAddresses": [{"ip": "10.0.0.1"}]}]}})
    hooks = read_policy_webhooks(reader, "op")
    assert not hooks.runs("validating")
    (problem,) = {h.problem for h in hooks.hooks}
    assert "no ready endpoint" in problem and "1 not ready" in problem
    assert [h.kind for h in hooks.refuses_writes()] == ["validating", "mutating"]
    assert "failurePolicy Fail" in hooks.hooks[0].to_json()["whenUnreachable"]


def test_a_missing_service_and_a_refusing_url() -> None:
    assert "does not exist" in read_policy_webhooks(_cluster(SVC), "op").hooks[0].problem

    def refuse(host: str, port: int, timeout: float) -> None:
        raise ConnectionRefusedError(111, "Connection refused")
    url = Endpoint.url("https://127.0.0.1:9443", b"ca")
    hooks = read_policy_webhooks(_cluster(url, failure="Ignore"), "op", connect=refuse)
    assert all("127.0.0.1:9443 does not accept connections" in h.problem for h in hooks.hooks)
    assert not hooks.refuses_writes() and not hooks.runs("validating")
    assert read_policy_webhooks(_cluster(url), "op", connect=lambda *_: None).runs("validating")


def test_a_namespace_selector_that_excludes_the_namespace_means_no_webhook() -> None:
    url = Endpoint.url("https://127.0.0.1:9443", b"ca")
    assert read_policy_webhooks(_cluster(url, {"matchLabels": {"team": "other"}}), "op",
                                connect=lambda *_: None).hooks == ()
    assert read_policy_webhooks(_cluster(url, {"matchLabels": {"team": "net"}}), "op",
                                connect=lambda *_: None).runs("validating")
