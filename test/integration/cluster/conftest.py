"""Fixtures of the cluster tests: a namespace in the session's 2-node cluster (test/conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NAMESPACE, SERVICE_ACCOUNT
from test.support.cluster import ClusterNodes
from test.support.controllers_harness import client_for
from test.support.poll import wait_for


@pytest.fixture
def kube(cluster_nodes: ClusterNodes) -> Client:
    return client_for(cluster_nodes.kubeconfig)


@pytest.fixture
def node_namespace(kube: Client) -> Iterator[str]:
    """A fresh namespace whose `default` ServiceAccount exists (kube-controller-manager creates it;
    pods are refused until then)."""
    name = f"nodes-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACE, {"metadata": {"name": name}})
    wait_for(lambda: kube.get(SERVICE_ACCOUNT, "default", name), timeout=120, what=f"serviceaccount {name}/default")
    yield name
    try:
        kube.delete(NAMESPACE, name)
    except NotFound:
        pass
