"""A graceful handover must not lose a deletion: the leader's shutdown removes the finalizer from the
networks in the operator namespace (upstream's cleanup), so a SriovNetwork deleted before the next leader
adds it back disappears at once, with its NAD (in another namespace, out of reach of an ownerReference)
still there. The next leader must delete that NAD. Found by hack/failover.py's final NAD comparison.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION as NAD
from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import NotFound
from test.support.kube import create_namespace, delete_namespace
from test.support.operator_process import OperatorProcess, ensure_supported_nics
from test.support.poll import wait_for

ELECTION = ["--leader-elect", "--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s",
            "--leader-election-retry-period", "0.5s"]


def exists(client: Client, kind: object, name: str, namespace: str) -> bool:
    try:
        client.get(kind, name, namespace)  # type: ignore[arg-type]
        return True
    except NotFound:
        return False


@pytest.fixture
def target(kubeconfig: Path) -> Iterator[str]:
    name = f"nads-{uuid.uuid4().hex[:6]}"
    create_namespace(kubeconfig, name)
    yield name
    delete_namespace(kubeconfig, name)


def test_a_network_deleted_between_two_leaders_loses_its_nad(kubeconfig: Path, namespace: str, target: str,
                                                            tmp_path: Path) -> None:
    client = Client(load_config(str(kubeconfig)))
    ensure_supported_nics(client, namespace)
    keep = {"metadata": {"name": "keep", "namespace": namespace},
            "spec": {"resourceName": "r", "networkNamespace": target}}
    gone = {"metadata": {"name": "gone", "namespace": namespace},
            "spec": {"resourceName": "r", "networkNamespace": target}}
    first = OperatorProcess(kubeconfig, namespace, tmp_path / "first.log",
                            args=[*ELECTION, "--leader-election-identity", "first"])
    second: OperatorProcess | None = None
    try:
        first.wait_ready()
        client.create(SRIOV_NETWORK, keep, namespace)
        client.create(SRIOV_NETWORK, gone, namespace)
        wait_for(lambda: exists(client, NAD, "gone", target) and exists(client, NAD, "keep", target), 60,
                 "both NADs")
        assert first.terminate(signal.SIGTERM) == 0, first.log_tail()
        network = client.get(SRIOV_NETWORK, "gone", namespace)
        assert consts.NETATTDEF_FINALIZER not in (network["metadata"].get("finalizers") or [])

        client.delete(SRIOV_NETWORK, "gone", namespace)  # no finalizer: gone at once, its NAD stays
        assert not exists(client, SRIOV_NETWORK, "gone", namespace)
        assert exists(client, NAD, "gone", target)

        second = OperatorProcess(kubeconfig, namespace, tmp_path / "second.log",
                                 args=[*ELECTION, "--leader-election-identity", "second"])
        second.wait_ready()
        wait_for(lambda: not exists(client, NAD, "gone", target), 60, "the orphaned NAD to be deleted")
        # The NAD of a network that still exists is left alone, and its finalizer is back.
        wait_for(lambda: consts.NETATTDEF_FINALIZER in (
            client.get(SRIOV_NETWORK, "keep", namespace)["metadata"].get("finalizers") or []), 60,
            "the finalizer back on the remaining network")
        assert exists(client, NAD, "keep", target)
        assert second.terminate(signal.SIGTERM) == 0, second.log_tail()
    finally:
        first.stop()
        if second is not None:
            second.stop()
        client.close()
