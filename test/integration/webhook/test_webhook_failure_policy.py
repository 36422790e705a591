"""The rendered configurations' failure policies, as the API server applies them when the webhook is down:
the operator webhook fails closed (Fail), the pod injector fails open (Ignore)."""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest

from sriovop.api.v1 import kinds
from sriovop.devcluster import ControlPlane
from sriovop.devcluster.process import free_port
from sriovop.render.webhook_configs import Endpoint, injector_webhook_config, operator_webhook_configs
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError, NotFound
from test.support.webhook_objects import policy


def test_operator_webhook_fails_closed_and_injector_fails_open(control_plane: ControlPlane) -> None:
    run = uuid.uuid4().hex[:8]
    client = Client(load_config(str(control_plane.kubeconfig)))
    ns = f"whfail-{run}"
    label = {"sriovop-webhook-failure-test": run}
    dead = Endpoint.url(f"https://127.0.0.1:{free_port()}", control_plane.ca_pem)  # nothing listens there
    validating, mutating = operator_webhook_configs(dead, name=f"sriov-operator-webhook-config-{run}",
                                                    namespace_selector={"matchLabels": label})
    injector = injector_webhook_config(dead, name=f"network-resources-injector-config-{run}",
                                       namespace_selector={"matchLabels": label})
    created: list[tuple[object, str]] = []
    try:
        client.create(core.NAMESPACE, {"metadata": {"name": ns, "labels": label}})
        client.create(core.SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": ns}})
        for kind, obj in ((core.VALIDATING_WEBHOOK_CONFIGURATION, validating),
                          (core.MUTATING_WEBHOOK_CONFIGURATION, mutating),
                          (core.MUTATING_WEBHOOK_CONFIGURATION, injector)):
            client.create(kind, obj)
            created.append((kind, obj["metadata"]["name"]))
        deadline = time.monotonic() + 30
        while True:  # the API server loads new webhook configurations asynchronously
            try:
                client.create(kinds.SRIOV_NETWORK_NODE_POLICY, policy("p", ns), dry_run=True)
            except ApiError as exc:
                assert "failed calling webhook" in exc.message, exc.message
                assert "operator-webhook.sriovnetwork.openshift.io" in exc.message
                break
            assert time.monotonic() < deadline, "the Fail policy never took effect"
            time.sleep(0.2)
        pod = {"metadata": {"name": "app", "namespace": ns,
                            "annotations": {"k8s.v1.cni.cncf.io/networks": "whatever"}},
               "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
        stored = client.create(core.POD, pod)
        assert not stored["spec"]["containers"][0].get("resources")
        # Admitted because the injector failed open, not because it was never called:
        metrics = client.request("GET", "/metrics").data.decode()
        fail_open = [line for line in metrics.splitlines()
                     if line.startswith("apiserver_admission_webhook_fail_open_count")
                     and "network-resources-injector-config.k8s.io" in line]
        assert fail_open and float(fail_open[0].rsplit(" ", 1)[1]) >= 1, fail_open
    finally:
        for kind, name in created:
            with contextlib.suppress(NotFound):
                client.delete(kind, name)  # type: ignore[arg-type]
        with contextlib.suppress(NotFound):
            client.delete(core.NAMESPACE, ns)
        client.close()



def test_injector_match_condition_calls_only_annotated_pods(control_plane: ControlPlane) -> None:
    """With the resourceInjectorMatchCondition gate the injector fails closed, but its CEL matchCondition
    keeps pods without the networks annotation away from it, so only those pods are blocked when it is down."""
    run = uuid.uuid4().hex[:8]
    client = Client(load_config(str(control_plane.kubeconfig)))
    ns = f"whmatch-{run}"
    label = {"sriovop-webhook-match-test": run}
    dead = Endpoint.url(f"https://127.0.0.1:{free_port()}", control_plane.ca_pem)
    injector = injector_webhook_config(dead, name=f"network-resources-injector-config-{run}",
                                       match_condition=True, namespace_selector={"matchLabels": label})
    try:
        client.create(core.NAMESPACE, {"metadata": {"name": ns, "labels": label}})
        client.create(core.SERVICE_ACCOUNT, {"metadata": {"name": "default", "namespace": ns}})
        client.create(core.MUTATING_WEBHOOK_CONFIGURATION, injector)

        def pod(name: str, annotated: bool, annotation: str = "k8s.v1.cni.cncf.io/networks") -> dict[str, object]:
            meta: dict[str, object] = {"name": name, "namespace": ns}
            if annotated:
                meta["annotations"] = {annotation: "net"}
            return {"metadata": meta, "spec": {"containers": [{"name": "main", "image": "busybox"}]}}

        deadline = time.monotonic() + 30
        while True:
            try:
                client.create(core.POD, pod("probe", True), dry_run=True)
            except ApiError as exc:
                assert "failed calling webhook" in exc.message, exc.message
                assert "network-resources-injector-config.k8s.io" in exc.message
                break
            assert time.monotonic() < deadline, "the injector configuration never took effect"
            time.sleep(0.2)
        with pytest.raises(ApiError) as info:  # the default network triggers injection too: sent, so blocked
            client.create(core.POD, pod("default-net", True, "v1.multus-cni.io/default-network"), dry_run=True)
        assert "network-resources-injector-config.k8s.io" in info.value.message
        client.create(core.POD, pod("plain", False))  # not sent to the (dead) injector at all
    finally:
        with contextlib.suppress(NotFound):
            client.delete(core.MUTATING_WEBHOOK_CONFIGURATION, injector["metadata"]["name"])
        with contextlib.suppress(NotFound):
            client.delete(core.NAMESPACE, ns)
        client.close()
