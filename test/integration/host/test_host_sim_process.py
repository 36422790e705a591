"""The simulator as a separate process, and an apply process killed at every named step.

This is the shape the daemon's crash-safety tests use: the simulated kernel outlives the daemon, the
daemon is SIGKILLed at a step, a new daemon process finds the host half-way and converges it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.host import Host
from sriovop.host import steps as S
from sriovop.sim.access import SimKernelAccess
from sriovop.sim.control import SimControl
from test.support.host_sim import pf_status, sim_process

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def sim_proc(tmp_path: Path) -> Iterator[tuple[Path, dict]]:
    root = tmp_path / "host"
    with sim_process(root, ["xxv710:1", "82576:1"]) as desc:
        yield root, desc
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert desc["netns"] not in listing  # SIGTERM removed the namespace


def run_apply(root: Path, spec: list[dict], crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(S.CRASH_ENV, None)
    if crash_at:
        env[S.CRASH_ENV] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "test.support.host_apply_once", str(root), json.dumps(spec)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )


def full_spec(desc: dict) -> list[dict]:
    pf = desc["pfs"][0]
    return [{
        "pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 4, "mtu": 9000,
        "vfGroups": [
            {"resourceName": "net", "deviceType": "netdevice", "vfRange": "0-1", "mtu": 9000},
            {"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": "2-3"},
        ],
    }]


def assert_converged(root: Path, spec: list[dict]) -> None:
    with Host(root, kernel=SimKernelAccess(root)) as host:
        st = pf_status(host, spec[0]["pciAddress"])
        assert st["numVfs"] == 4 and st["mtu"] == 9000 and st["linkAdminState"] == "up"
        assert [v["driver"] for v in st["Vfs"]] == ["iavf", "iavf", "vfio-pci", "vfio-pci"]
        assert [v.get("mtu") for v in st["Vfs"][:2]] == [9000, 9000]
        assert host.records.load(spec[0]["pciAddress"]) == spec[0]


@pytest.mark.parametrize("step", S.APPLY_STEPS)
def test_killed_at_step_then_restarted_converges(sim_proc: tuple[Path, dict], step: str) -> None:
    root, desc = sim_proc
    spec = full_spec(desc)
    crashed = run_apply(root, spec, crash_at=step)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    again = run_apply(root, spec)
    assert again.returncode == 0, again.stderr
    assert_converged(root, spec)
    # And a third run has nothing left to do.
    third = run_apply(root, spec)
    assert json.loads(third.stdout)["configured"] == []


def test_faults_injected_from_another_process(sim_proc: tuple[Path, dict]) -> None:
    root, desc = sim_proc
    pf = desc["pfs"][1]
    SimControl(root).fault(pf["pciAddress"], enomem=True)
    res = run_apply(root, [{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 2}])
    assert res.returncode == 3
    assert f"pf {pf['pciAddress']}: step write-numvfs" in res.stderr and "pci=realloc" in res.stderr
    SimControl(root).fault(pf["pciAddress"], enomem=False)
    res = run_apply(root, [{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 2}])
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("step", S.RESET_STEPS)
def test_reset_killed_at_step_then_restarted_converges(sim_proc: tuple[Path, dict], step: str) -> None:
    root, desc = sim_proc
    spec = full_spec(desc)
    assert run_apply(root, spec).returncode == 0
    crashed = run_apply(root, [], crash_at=step)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    again = run_apply(root, [])
    assert again.returncode == 0, again.stderr
    with Host(root, kernel=SimKernelAccess(root)) as host:
        st = pf_status(host, spec[0]["pciAddress"])
        assert "numVfs" not in st and st["mtu"] == 1500
        assert not host.records.exists(spec[0]["pciAddress"])
