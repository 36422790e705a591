"""SIGTERM to a real `sriovop operator`: webhooks end at Ignore, operator-namespace SriovNetworks lose
their finalizer (networks elsewhere keep theirs), and the exit code is 0."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import NAMESPACE
from test.support.operator_drain import client_for
from test.support.operator_process import (
    OperatorProcess,
    ensure_supported_nics,
    failure_policies,
    install_failing_webhooks,
    remove_webhooks,
)
from test.support.poll import wait_for


@pytest.fixture
def webhook_configs(kubeconfig: Path) -> Iterator[Client]:
    client = client_for(kubeconfig)
    install_failing_webhooks(client)
    yield client
    remove_webhooks(client)


def sriov_network(client: Client, namespace: str, name: str) -> dict[str, Any]:
    return client.create(SRIOV_NETWORK, {"metadata": {"name": name, "namespace": namespace},
                                         "spec": {"resourceName": "intel_vfs", "networkNamespace": namespace}})


def finalizers(client: Client, namespace: str, name: str) -> list[str]:
    return list(client.get(SRIOV_NETWORK, name, namespace)["metadata"].get("finalizers") or [])


def test_sigterm_sets_webhooks_to_ignore_and_drops_finalizers(
        kubeconfig: Path, namespace: str, webhook_configs: Client, tmp_path: Path) -> None:
    client = webhook_configs
    ensure_supported_nics(client, namespace)
    other_ns = f"{namespace}-other"
    client.create(NAMESPACE, {"metadata": {"name": other_ns}})
    # A network outside the operator namespace, with a finalizer someone else put there: left alone.
    client.create(SRIOV_NETWORK, {"metadata": {"name": "elsewhere", "namespace": other_ns,
                                               "finalizers": [consts.NETATTDEF_FINALIZER]},
                                  "spec": {"resourceName": "intel_vfs"}})
    for name in ("net-a", "net-b"):
        sriov_network(client, namespace, name)

    op = OperatorProcess(kubeconfig, namespace, tmp_path / "operator.log")
    try:
        op.wait_ready()
        # The network controller is running: it puts its finalizer on operator-namespace networks.
        for name in ("net-a", "net-b"):
            wait_for(lambda n=name: consts.NETATTDEF_FINALIZER in finalizers(client, namespace, n), 60,
                     f"the operator's finalizer on {name}")
        assert op.get("/healthz")[0] == 200
        status, metrics = op.get("/metrics", op.metrics_port)
        assert status == 200 and "controller_runtime_reconcile_total" in metrics
        code = op.terminate(signal.SIGTERM)
        assert code == 0, op.log_tail()
    finally:
        op.stop()

    for name in ("net-a", "net-b"):
        assert consts.NETATTDEF_FINALIZER not in finalizers(client, namespace, name)
    assert finalizers(client, other_ns, "elsewhere") == [consts.NETATTDEF_FINALIZER]
    assert failure_policies(client) == ["Ignore"] * 3
    client.patch(SRIOV_NETWORK, "elsewhere", {"metadata": {"finalizers": None}}, other_ns)
    client.delete(NAMESPACE, other_ns)


def test_missing_supported_nic_ids_is_a_clear_startup_error(kubeconfig: Path, namespace: str,
                                                             tmp_path: Path) -> None:
    op = OperatorProcess(kubeconfig, namespace, tmp_path / "operator.log")
    try:
        code = op.proc.wait(60)
    finally:
        op.stop()
    assert code == 1
    assert f"ConfigMap {namespace}/supported-nic-ids does not exist" in op.log_path.read_text()


def test_empty_resource_prefix_is_a_clear_startup_error(kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    op = OperatorProcess(kubeconfig, namespace, tmp_path / "operator.log", extra_env={"RESOURCE_PREFIX": ""})
    try:
        code = op.proc.wait(60)
    finally:
        op.stop()
    assert code == 1
    assert "RESOURCE_PREFIX is empty" in op.log_path.read_text()
