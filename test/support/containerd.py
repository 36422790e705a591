"""A private containerd for image tests: its own root, state, socket and config under a temporary dir.

It never touches a system containerd. The CRI plugin is disabled (image tests import and `ctr run`
only), so nothing here depends on the kubelet-facing settings a cluster node needs.
Host: this machine (containerd + runc from Debian, installed by hack/install-deps.sh).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from test.support.runtime_live import eventually

NAMESPACE = "k8s.io"

_CONFIG = """version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
"""


@dataclass(frozen=True)
class Containerd:
    address: Path
    directory: Path

    def ctr(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["ctr", "--address", str(self.address), "-n", NAMESPACE, *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"ctr {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def image_names(self) -> set[str]:
        return set(self.ctr("images", "ls", "-q").stdout.split())

    def task_status(self, container_id: str) -> str | None:
        for line in self.ctr("tasks", "ls").stdout.splitlines()[1:]:
            fields = line.split()
            if fields and fields[0] == container_id:
                return fields[-1]
        return None

    def run(self, image: str, container_id: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """`ctr run --rm IMAGE ID ARGS...` to completion (ARGS replace the image's Cmd)."""
        return self.ctr("run", "--rm", image, container_id, *args, timeout=timeout, check=False)


def _unmount_under(directory: Path) -> None:
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for target in sorted((m for m in mounts if m.startswith(str(directory) + "/")), reverse=True):
        subprocess.run(["umount", "-l", target], check=False, capture_output=True)


@contextmanager
def private_containerd() -> Iterator[Containerd]:
    """Start containerd on a socket of its own; stop it and remove its files on exit."""
    for tool in ("containerd", "ctr", "runc"):
        if shutil.which(tool) is None:
            raise AssertionError(f"{tool} is not on PATH: run `make deps` (hack/install-deps.sh installs it)")
    directory = Path(tempfile.mkdtemp(prefix="sriovop-ctrd-"))
    sock = directory / "containerd.sock"
    config = directory / "config.toml"
    config.write_text(_CONFIG.format(root=directory / "root", state=directory / "state", sock=sock))
    log = open(directory / "containerd.log", "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(["containerd", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    daemon = Containerd(address=sock, directory=directory)
    try:
        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"containerd exited ({proc.returncode}): "
                                     f"{(directory / 'containerd.log').read_text()[-2000:]}")
            return sock.exists() and daemon.ctr("version", check=False, timeout=30).returncode == 0
        eventually(ready, 120, "the private containerd to answer on its socket")
        yield daemon
    finally:
        for leftover in daemon.ctr("containers", "ls", "-q", check=False, timeout=60).stdout.split():
            daemon.ctr("tasks", "rm", "-f", leftover, check=False, timeout=60)
            daemon.ctr("containers", "rm", leftover, check=False, timeout=60)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        _unmount_under(directory)
        shutil.rmtree(directory, ignore_errors=True)
