"""How a hollow fleet starts its worker processes: one batch of daemons at a time, while the next
batch's hosts build. Batches of daemons that start on top of each other kept a 5,000-node fleet's
machine in the kernel. (No cluster, no processes: the fleet's process steps are recorded instead.)"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest

from sriovop.hollow import supervisor
from sriovop.hollow.supervisor import PARALLEL_BUILDS, HollowFleet, Slice
from test.support.unreachable import unreachable_kubeconfig


def _recorded_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slices: int) -> list[tuple[str, int]]:
    """Start a fleet of `slices` one-node slices; return its steps: ("sims"|"daemons", slice) when a
    process starts, ("wait sims"|"wait daemons", slice) when the start waits for one to be ready."""
    steps: list[tuple[str, int]] = []
    fleet = HollowFleet(tmp_path / "fleet", unreachable_kubeconfig(tmp_path / "kubeconfig"), count=slices,
                        per_process=1, say=lambda line: None)

    def start_sims(s: Slice) -> None:
        steps.append(("sims", s.index))

    def start_daemons(index: int, wait: bool = True, timeout: float = 600.0) -> None:
        assert not wait
        steps.append(("daemons", index))

    def wait_ready(waiting: Sequence[tuple[Slice, str]], deadline: float) -> None:
        steps.extend((f"wait {role}", s.index) for s, role in waiting)

    monkeypatch.setattr(supervisor, "check_threads", lambda count: None)
    monkeypatch.setattr(fleet, "register", lambda: None)
    monkeypatch.setattr(fleet, "_start_sims", start_sims)
    monkeypatch.setattr(fleet, "start_daemons", start_daemons)
    monkeypatch.setattr(fleet, "_wait_ready", wait_ready)
    try:
        fleet.start()
    finally:
        fleet.client.close()
    return steps


def test_a_batch_of_daemons_starts_only_once_the_previous_batch_has_synced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _recorded_start(tmp_path, monkeypatch, slices=3 * PARALLEL_BUILDS)
    batches = [range(b * PARALLEL_BUILDS, (b + 1) * PARALLEL_BUILDS) for b in range(3)]
    for previous, batch in itertools.pairwise(batches):
        first_start = min(steps.index(("daemons", i)) for i in batch)
        for i in previous:
            assert steps.index(("wait daemons", i)) < first_start, (
                f"slice {i}'s daemons were not waited for before slice {batch[0]}'s started: {steps}")


def test_the_next_batch_of_hosts_builds_while_a_batch_of_daemons_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _recorded_start(tmp_path, monkeypatch, slices=2 * PARALLEL_BUILDS)
    for i in range(PARALLEL_BUILDS):
        assert steps.index(("daemons", i)) < steps.index(("sims", PARALLEL_BUILDS)), steps
    # Every slice's daemons are waited for before the start returns, the last batch's included.
    assert {i for step, i in steps if step == "wait daemons"} == set(range(2 * PARALLEL_BUILDS))
