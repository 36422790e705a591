"""Fixtures shared by the elector tests: an admin client, and candidates shut down after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from test.support.leaderelection_harness import Candidate


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[Client]:
    c = Client(load_config(str(kubeconfig)))
    yield c
    c.close()


@pytest.fixture
def candidates() -> Iterator[list[Candidate]]:
    started: list[Candidate] = []
    yield started
    for c in started:
        c.shutdown()
