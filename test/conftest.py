"""Shared fixtures: one real kube-apiserver + etcd for the whole run, and a fresh namespace per test.

A test that needs the control plane fails (never skips) when it cannot be started.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.devcluster import ControlPlane
from test.support.cluster import ClusterNodes, cluster_down, cluster_up
from test.support.kube import apply_crds, create_namespace, delete_namespace

REPO = Path(__file__).resolve().parents[1]
CRD_DIR = REPO / "manifests" / "crds"


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    cp = ControlPlane().start()
    try:
        if CRD_DIR.is_dir():
            apply_crds(cp.kubeconfig, sorted(CRD_DIR.glob("*.yaml")))
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def private_control_plane(tmp_path: Path) -> Iterator[ControlPlane]:
    """A control plane of the test's own, for tests that install cluster-scoped objects (CRDs,
    ClusterRoles, the operator namespace) the shared one must not get."""
    cp = ControlPlane(tmp_path / "cp").start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> Path:
    return control_plane.kubeconfig


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    base = "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    create_namespace(control_plane.kubeconfig, name)
    yield name
    if not os.environ.get("SRIOVOP_KEEP_NAMESPACES"):
        delete_namespace(control_plane.kubeconfig, name)


@pytest.fixture(scope="session")
def cluster_nodes() -> Iterator[ClusterNodes]:
    """A 2-node cluster on this machine (real kubelets, one containerd each, kube-controller-manager,
    kube-scheduler, Service routing), started with `sriovop dev cluster up --nodes 2` for the whole run.

    Host: this machine, not the simulated SR-IOV host nor the QEMU guest. Nodes: sriovop-node-1
    (control-plane role) and sriovop-node-2 (worker). The directory is short on purpose: containerd's
    socket path must fit a unix socket address.
    """
    directory = Path(tempfile.mkdtemp(prefix="sov-", dir="/tmp"))
    try:
        yield cluster_up(directory, 2)
    finally:
        cluster_down(directory)
        shutil.rmtree(directory, ignore_errors=True)
