"""The pod sandbox image: built from hack/pause, cached, imported by containerd and run by runc.

Host: this machine, through a private containerd (own root, state and socket under a temp dir).
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from sriovop.devcluster.images.pause import PAUSE_CONFIG, PAUSE_IMAGE, ensure_pause_archive
from test.support.containerd import private_containerd
from test.support.oci_layout import read_archive
from test.support.poll import wait_for


@pytest.fixture(scope="module")
def pause_archive() -> Path:
    return ensure_pause_archive()


def test_archive_names_the_sandbox_image_and_is_cached(pause_archive: Path) -> None:
    image = read_archive(pause_archive)
    assert image.name == PAUSE_IMAGE and image.ref_name == "3.10"
    assert image.config["config"]["Entrypoint"] == ["/pause"]
    assert image.config["config"]["User"] == PAUSE_CONFIG.user
    [members] = image.layer_members
    pause = next(m for m in members if m.name == "pause")
    assert pause.isreg() and pause.mode & 0o111 and (pause.uid, pause.gid) == (0, 0)
    before = pause_archive.stat().st_mtime_ns
    assert ensure_pause_archive() == pause_archive
    assert pause_archive.stat().st_mtime_ns == before, "a warm call rebuilt the archive"


def test_containerd_imports_and_runs_pause_until_sigterm(pause_archive: Path) -> None:
    with private_containerd() as ctrd:
        ctrd.ctr("images", "import", str(pause_archive))
        assert PAUSE_IMAGE in ctrd.image_names()
        cid = f"pause-{uuid.uuid4().hex[:8]}"
        run = subprocess.Popen(["ctr", "--address", str(ctrd.address), "-n", "k8s.io", "run", "--rm",
                                PAUSE_IMAGE, cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: ctrd.task_status(cid) == "RUNNING", 120, f"task {cid} to be RUNNING")

            # It keeps running (a sandbox must outlive its containers) until asked to stop. As PID 1 of
            # its namespace it ignores SIGTERM until its handler is installed, so ask until it exits.
            def stopped_on_sigterm() -> bool:
                ctrd.ctr("tasks", "kill", "-s", "SIGTERM", cid, check=False)
                try:
                    run.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    return False
                return True

            wait_for(stopped_on_sigterm, 120, f"task {cid} to exit on SIGTERM")
            out, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait(30)
        assert run.returncode == 0, (out, err)
        assert "shutting down, got signal: terminated" in out + err
        assert cid not in ctrd.ctr("containers", "ls", "-q").stdout.split()
