"""e2e fixtures: guest preparation (timed) and a summary of the VM timings at the end of the run.

These tests boot QEMU guests; every module sets `pytestmark = pytest.mark.e2e`, so the default run
(`-m 'not e2e'`) deselects them and `make e2e` runs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlparse

import pytest

from sriovop.devcluster import ControlPlane
from sriovop.devcluster.vmguest import STALLED_BOOTS
from test.support.vm_guest import GuestFactory, GuestVM, ensure_setup, guest_kubeconfig

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


@pytest.fixture(scope="session")
def cluster_guest(vm_ready: None, control_plane: ControlPlane) -> GuestFactory:
    """Makes guests wired to the shared control plane: the apiserver forward, /run/job/kubeconfig
    (admin unless `kubeconfig=` names another, e.g. `control_plane.mint_user(...)`), the hostname and
    NODE_NAME set to `node`, KUBECONFIG exported. For the config daemon:

        with cluster_guest(node="node-1").start(f"exec {venv}/sriovop config-daemon --host-root /") as g: ...

    Session-scoped (the factory holds no state) so module-scoped scenarios can use it too.
    """
    port = urlparse(control_plane.url).port
    assert port, control_plane.url

    def make(node: str = "e2e-node-1", igb: int = 1, kubeconfig: object = None,
             env: Mapping[str, str] | None = None, files: Mapping[str, str | bytes] | None = None,
             **vm: Any) -> GuestVM:
        kc = guest_kubeconfig(str(kubeconfig) if kubeconfig else control_plane.kubeconfig)
        return GuestVM(igb=igb, apiserver_port=port, hostname=node,
                       env={"NODE_NAME": node, "KUBECONFIG": "/run/job/kubeconfig", **(env or {})},
                       files={"kubeconfig": kc, **(files or {})}, **vm)

    return make


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        rounded = {k: round(v, 3) for k, v in TIMINGS.items()}
        terminalreporter.write_line("e2e vm timings: " + json.dumps(rounded, sort_keys=True))
    for report in STALLED_BOOTS:  # replaced boots pass quietly: say each one
        terminalreporter.write_line(f"e2e stalled guest boot: {report[:2000]}")
