"""hack/kind/docker-wrapper/docker: kind's `--privileged` becomes a capability list only where the
machine's bounding set lacks a capability, and every other command passes through untouched.

No host: the real docker is a stand-in script that prints its arguments, and SRIOVOP_CAPBND stands in
for /proc/self/status, so both kinds of machine are exercised here.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest

WRAPPER = Path(__file__).resolve().parents[3] / "hack" / "kind" / "docker-wrapper" / "docker"
LAST_CAP = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
FULL = (1 << (LAST_CAP + 1)) - 1
SYS_RESOURCE = 24


@pytest.fixture
def fake_docker(tmp_path: Path) -> Path:
    script = tmp_path / "real-docker"
    script.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    script.chmod(0o755)
    return script


def run(fake_docker: Path, capbnd: int, *args: str) -> list[str]:
    env = dict(os.environ, SRIOVOP_DOCKER=str(fake_docker), SRIOVOP_CAPBND=f"{capbnd:016x}")
    done = subprocess.run(["bash", str(WRAPPER), *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


KIND_RUN = ("run", "--name", "c-control-plane", "--privileged", "--security-opt", "seccomp=unconfined",
            "--cgroupns=private", "sriovop/kind-node:v1.35.4")


def test_a_full_bounding_set_changes_nothing(fake_docker: Path) -> None:
    assert run(fake_docker, FULL, *KIND_RUN) == list(KIND_RUN)
    assert run(fake_docker, FULL, "exec", "--privileged", "-i", "n", "kubeadm") == [
        "exec", "--privileged", "-i", "n", "kubeadm"]


def test_without_sys_resource_run_privileged_becomes_every_capability_but_that_one(fake_docker: Path) -> None:
    args = run(fake_docker, FULL & ~(1 << SYS_RESOURCE), *KIND_RUN)
    assert "--privileged" not in args
    assert args[:3] == ["run", "--name", "c-control-plane"]
    assert args[-1] == "sriovop/kind-node:v1.35.4"
    pairs = list(itertools.pairwise(args))
    assert ("--cap-add", "ALL") in pairs
    assert [b for a, b in pairs if a == "--cap-drop"] == ["SYS_RESOURCE"]
    assert ("--security-opt", "systempaths=unconfined") in pairs
    assert ("--device-cgroup-rule", "a *:* rwm") in pairs
    assert ("--security-opt", "seccomp=unconfined") in pairs  # kind's own options stay


def test_without_sys_resource_exec_privileged_drops_the_flag_and_other_commands_pass(fake_docker: Path) -> None:
    reduced = FULL & ~(1 << SYS_RESOURCE)
    assert run(fake_docker, reduced, "exec", "--privileged", "-i", "n", "kubeadm", "init") == [
        "exec", "-i", "n", "kubeadm", "init"]
    assert run(fake_docker, reduced, "ps", "-a", "--filter", "label=x") == ["ps", "-a", "--filter", "label=x"]
    assert run(fake_docker, reduced, "run", "--rm", "busybox") == ["run", "--rm", "busybox"]
