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

from test.support.poll import wait_for

NAMESPACE = "k8s.io"
#: Where `Containerd.run` has a container write its stdout and stderr (a bind mount of a host directory).
RUN_OUTPUT = "/ctr-run-output"

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
        """`ctr run --rm IMAGE ID ARGS...` to completion (ARGS are the whole command line).

        The command's stdout and stderr go to files on a bind mount, read once it has ended: ctr copies a
        container's output through FIFOs, and for a short-lived one that copy can lose all of it (a
        known containerd race; seen here as `lspci --version` exiting 0 with nothing printed). The
        image's /bin/sh applies the redirections and `exec`s the command, so its exit code is kept.
        """
        if not args:
            raise ValueError("Containerd.run needs the command line to run")
        out = Path(tempfile.mkdtemp(prefix="ctr-run-", dir=self.directory))
        out.chmod(0o777)  # the images' own users (65532) write there
        wrapped = ("sh", "-c", f'exec "$@" >{RUN_OUTPUT}/stdout 2>{RUN_OUTPUT}/stderr', "sh", *args)
        proc = self.ctr("run", "--rm", "--mount", f"type=bind,src={out},dst={RUN_OUTPUT},options=rbind:rw",
                        image, container_id, *wrapped, timeout=timeout, check=False)
        try:
            captured = [(out / name).read_text() if (out / name).exists() else "" for name in ("stdout", "stderr")]
        finally:
            shutil.rmtree(out, ignore_errors=True)
        # ctr's own complaints (an image it cannot find, a mount it cannot make) come on its stderr.
        return subprocess.CompletedProcess(proc.args, proc.returncode, captured[0] + proc.stdout,
                                           captured[1] + proc.stderr)


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
        wait_for(ready, 120, "the private containerd to answer on its socket")
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
