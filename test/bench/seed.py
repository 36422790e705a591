"""Write a generated cluster (test/bench/clustergen.py) into a real API server, quickly and with progress.

Shared by the admission, operator and informer benchmarks: Nodes, then NodeStates with their status
(create, then a status update, as the operator and daemon do), then the stored policies; 16 writers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import clustergen

from sriovop.api.v1 import kinds
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict

REPO = Path(__file__).resolve().parents[2]
WRITERS = 16


def progress(label: str, done: int, total: int, started: float) -> None:
    if done == total or done % 500 == 0:
        print(f"  {label}: {done}/{total} ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)


def parallel(label: str, fn: Callable[[Any], object], items: Iterable[Any], writers: int = WRITERS) -> None:
    todo = list(items)
    started = time.monotonic()
    done = 0
    with ThreadPoolExecutor(writers) as pool:
        for _ in pool.map(fn, todo):
            done += 1
            progress(label, done, len(todo), started)


def base(client: Client, kubeconfig: Path, namespace: str) -> None:
    """CRDs, the operator namespace and the supported NIC list."""
    from test.support.kube import apply_crds

    apply_crds(kubeconfig, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
    for kind, obj in ((core.NAMESPACE, {"metadata": {"name": namespace}}),
                      (core.CONFIG_MAP, {"metadata": {"name": "supported-nic-ids", "namespace": namespace},
                                         "data": clustergen.SUPPORTED_NIC_DATA})):
        try:
            client.create(kind, obj)
        except Conflict:  # already exists
            pass


def nodes(client: Client, cluster: clustergen.Cluster, with_states: bool = True) -> None:
    parallel("nodes", lambda i: client.create(core.NODE, cluster.node(i)), range(cluster.n))
    if with_states:
        parallel("node states", lambda i: write_state(client, cluster.node_state(i)), range(cluster.n))


def write_state(client: Client, state: dict[str, Any]) -> None:
    status = state.pop("status")
    created = client.create(kinds.SRIOV_NETWORK_NODE_STATE, state)
    created["status"] = status
    client.update_status(kinds.SRIOV_NETWORK_NODE_STATE, created)


def policies(client: Client, cluster: clustergen.Cluster) -> None:
    parallel("policies", lambda p: client.create(kinds.SRIOV_NETWORK_NODE_POLICY, p), cluster.stored)
