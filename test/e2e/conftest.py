"""e2e fixtures: guest preparation (timed) and a summary of the VM timings at the end of the run.

These tests boot QEMU guests; every module sets `pytestmark = pytest.mark.e2e`, so the default run
(`-m 'not e2e'`) deselects them and `make e2e` runs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from test.support.vm_guest import ensure_setup

TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="session")
def vm_timings() -> dict[str, float]:
    """Tests record named durations (seconds) here; they are printed as JSON after the run."""
    return TIMINGS


@pytest.fixture(scope="session")
def vm_ready(vm_timings: dict[str, float]) -> Iterator[None]:
    """QEMU installed, kernel fetched, initramfs built (seconds: cold on a fresh machine, else warm)."""
    vm_timings["setup_seconds"] = ensure_setup()
    yield


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        rounded = {k: round(v, 3) for k, v in TIMINGS.items()}
        terminalreporter.write_line("e2e vm timings: " + json.dumps(rounded, sort_keys=True))
