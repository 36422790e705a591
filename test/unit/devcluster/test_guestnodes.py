"""The guest-node record a dev cluster's supervisor leaves in DIR/vm-nodes.json, and how `down` treats
it: a recorded QEMU wrapper (hack/vm/run.sh) that outlived its supervisor is killed with its process
group; a recorded pid that is no such wrapper (reused since) is left alone. Host: this machine's
processes only (a stand-in run.sh that sleeps), no QEMU."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from sriovop.devcluster.guestnodes import STATE_FILE, attached, check_count, kill_leftovers


def record(directory: Path, pid: int) -> None:
    (directory / STATE_FILE).write_text(json.dumps(
        {"sriovop-vm-1": {"pid": pid, "job": str(directory / "job"), "console": str(directory / "console.log")}}))


def test_attached_reads_the_record_and_the_console_file(tmp_path: Path) -> None:
    assert attached(tmp_path) == []
    record(tmp_path, os.getpid())
    [guest] = attached(tmp_path)
    assert (guest.name, guest.job, guest.pid) == ("sriovop-vm-1", tmp_path / "job", os.getpid())
    assert guest.console == ""
    (tmp_path / "console.log").write_text("SRIOVOP-GUEST-READY: uptime=3.1\n")
    assert "SRIOVOP-GUEST-READY" in guest.console


def test_a_recorded_pid_that_is_not_the_qemu_wrapper_is_not_killed(tmp_path: Path) -> None:
    record(tmp_path, os.getpid())
    [guest] = attached(tmp_path)
    assert not guest.running
    assert kill_leftovers(tmp_path) == []
    assert not (tmp_path / STATE_FILE).exists()


def test_a_wrapper_that_outlived_its_supervisor_is_killed_with_its_group(tmp_path: Path) -> None:
    script = tmp_path / "hack" / "vm" / "run.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nsleep 300 &\nwait\n")
    script.chmod(0o755)
    wrapper = subprocess.Popen([str(script)], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not subprocess.run(["pgrep", "-g", str(wrapper.pid), "sleep"], capture_output=True).stdout:
            assert time.monotonic() < deadline, "the stand-in wrapper never started its child"
            time.sleep(0.1)
        record(tmp_path, wrapper.pid)
        assert attached(tmp_path)[0].running
        assert kill_leftovers(tmp_path, grace=10) == [wrapper.pid]
        wrapper.wait(30)
        deadline = time.monotonic() + 30
        while subprocess.run(["pgrep", "-g", str(wrapper.pid)], capture_output=True).stdout:
            assert time.monotonic() < deadline, "a process of the wrapper's group survived"
            time.sleep(0.1)
    finally:
        if wrapper.poll() is None:
            os.killpg(wrapper.pid, 9)
            wrapper.wait()


@pytest.mark.parametrize(("vm_nodes", "nodes", "message"), [
    (2, 1, "expected 0..1"), (-1, 1, "expected 0..1"), (1, 0, "needs --nodes 1 or more")])
def test_counts_the_guest_cannot_have_are_refused(vm_nodes: int, nodes: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_count(vm_nodes, nodes)
    check_count(0, 0)
    check_count(1, 3)
