"""One installed cluster for the whole package (starting it costs minutes on a loaded machine)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from test.support.incluster import Installed, installed_cluster


@pytest.fixture(scope="package")
def installed() -> Iterator[Installed]:
    """Fails (never skips) when the cluster, the images or the install cannot come up."""
    with installed_cluster() as cluster:
        yield cluster
