"""One plan cluster (test.support.plan_cluster) shared by every test of this package."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from test.support.plan_cluster import Cluster
from test.support.plan_cluster import plan_cluster as start_plan_cluster


@pytest.fixture(scope="package")
def plan_cluster(control_plane: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with start_plan_cluster(control_plane.kubeconfig, tmp_path_factory.mktemp("plan")) as cluster:
        yield cluster
