"""hack/kind/install-deps.sh: which Debian packages it installs and whether it starts dockerd, and that
`--stop` stops only a dockerd it recorded as started by itself.

No host: `--dry-run` runs with a PATH holding only stand-in `docker`, `dockerd` and `mmdebstrap` scripts
(the stand-in `docker info` answers or not as the test says), so every combination of a machine is
exercised without installing or starting anything. `--stop` runs against stand-in processes.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "kind" / "install-deps.sh"
BASH = "/bin/bash"


def stand_in(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def dry_run(tmp_path: Path, present: set[str], engine_answers: bool,
            node_image: str = "sriovop/kind-node:v1.35.4") -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if "docker" in present:
        stand_in(bin_dir, "docker", f'[ "$1" = info ] && exit {0 if engine_answers else 1}; exit 2')
    for name in present - {"docker"}:
        stand_in(bin_dir, name, "exit 0")
    env = {"PATH": str(bin_dir), "DOCKERD_DIR": str(tmp_path / "state"), "KIND_NODE_IMAGE": node_image}
    done = subprocess.run([BASH, str(SCRIPT), "--dry-run"], env=env, capture_output=True, text=True, check=True)
    assert not (tmp_path / "state").exists(), "a dry run must not create anything"
    return done.stdout.splitlines()


ALL = {"docker", "dockerd", "mmdebstrap"}


def test_a_host_with_everything_and_a_running_engine_gets_nothing(tmp_path: Path) -> None:
    assert dry_run(tmp_path, ALL, engine_answers=True) == ["docker: running"]


def test_packages_present_but_no_engine_starts_dockerd_without_forwarding(tmp_path: Path) -> None:
    assert dry_run(tmp_path, ALL, engine_answers=False) == ["start dockerd --ip-forward=false"]


def test_a_fresh_machine_installs_both_packages_once_and_starts_dockerd(tmp_path: Path) -> None:
    out = dry_run(tmp_path, set(), engine_answers=False)
    assert len(out) == 2
    verb, *packages = out[0].split()
    assert verb == "install"
    assert sorted(packages) == ["docker.io", "mmdebstrap"]  # docker and dockerd are one package, named once
    assert out[1] == "start dockerd --ip-forward=false"


def test_only_mmdebstrap_missing_installs_it_and_leaves_the_running_engine(tmp_path: Path) -> None:
    assert dry_run(tmp_path, {"docker", "dockerd"}, engine_answers=True) == ["install mmdebstrap", "docker: running"]


def test_dockerd_without_the_cli_installs_docker_io(tmp_path: Path) -> None:
    assert dry_run(tmp_path, {"dockerd", "mmdebstrap"}, engine_answers=False) == [
        "install docker.io", "start dockerd --ip-forward=false"]


@pytest.fixture
def fake_dockerd(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process whose name (/proc/PID/comm) is dockerd, as the script checks before stopping it."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    stand_in(bin_dir, "dockerd", "trap 'exit 0' TERM\nwhile :; do sleep 0.1; done")
    proc = subprocess.Popen([str(bin_dir / "dockerd")])
    comm = Path(f"/proc/{proc.pid}/comm")
    deadline = time.monotonic() + 60
    while comm.read_text().strip() != "dockerd":  # the forked child has not exec'd the script yet
        assert time.monotonic() < deadline, "the stand-in dockerd did not start"
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def stop(state: Path) -> None:
    env = dict(os.environ, DOCKERD_DIR=str(state), DOCKERD_TIMEOUT="120")
    subprocess.run([BASH, str(SCRIPT), "--stop"], env=env, check=True, timeout=300)


def test_stop_ends_the_recorded_dockerd_and_forgets_it(tmp_path: Path,
                                                        fake_dockerd: subprocess.Popen[bytes]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "dockerd.pid").write_text(f"{fake_dockerd.pid}\n")
    stop(state)
    assert fake_dockerd.wait(timeout=120) == 0  # ended by SIGTERM (its trap exits 0), not killed
    assert not (state / "dockerd.pid").exists()


def test_stop_leaves_a_process_that_is_not_a_dockerd_alone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    other = subprocess.Popen(["sleep", "300"])
    try:
        (state / "dockerd.pid").write_text(f"{other.pid}\n")  # a stale record whose pid was reused
        stop(state)
        assert other.poll() is None
        assert not (state / "dockerd.pid").exists()
    finally:
        other.kill()
        other.wait()


def test_stop_without_a_record_does_nothing(tmp_path: Path) -> None:
    stop(tmp_path / "state")  # no directory, no pid file: an engine that was running before is not ours
    assert not (tmp_path / "state").exists()


def test_a_laptop_with_a_running_engine_and_the_stock_node_image_needs_neither_dockerd_nor_mmdebstrap(
        tmp_path: Path) -> None:
    # Docker Desktop, a rootless or a remote engine: the CLI answers, no dockerd binary here, no mmdebstrap.
    assert dry_run(tmp_path, {"docker"}, engine_answers=True, node_image="kindest/node:v1.35.0") == [
        "docker: running"]


def test_the_node_image_built_here_needs_mmdebstrap_even_with_a_running_engine(tmp_path: Path) -> None:
    assert dry_run(tmp_path, {"docker"}, engine_answers=True) == ["install mmdebstrap", "docker: running"]
