"""`sriovop dev`: a local control plane for trying sriovop and for its tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click

DEFAULT_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / "sriovop-dev"
UP_TIMEOUT_S = 120.0


@click.group()
def command() -> None:
    """Development helpers: a local kube-apiserver + etcd on loopback."""


@command.group()
def cluster() -> None:
    """Start or stop a local control plane (kube-apiserver + etcd, RBAC on, admin client cert)."""


def _supervisor_pid(directory: Path) -> int | None:
    from sriovop.devcluster import process  # the package imports the control plane: not for --help

    try:
        pid = int((directory / "supervisor.pid").read_text())
    except (FileNotFoundError, ValueError):
        return None
    return pid if process.pid_alive(pid) else None


@cluster.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DIR,
              show_default=True, help="Where certificates, data, logs, pids and the kubeconfig go.")
def up(directory: Path) -> None:
    """Start the control plane in the background and print the KUBECONFIG to use.

    Binaries come from the cache that hack/build-control-plane.sh fills (built on first use).
    """
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if _supervisor_pid(directory) is not None and (directory / "ready").exists():
        click.echo(f"export KUBECONFIG={directory / 'kubeconfig'}")
        return
    click.echo("building or locating kube-apiserver and etcd ...", err=True)
    from sriovop.devcluster import find_binaries, process  # imported here: `sriovop dev --help` stays fast

    find_binaries()
    log = open(directory / "supervisor.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [sys.executable, "-m", "sriovop.devcluster.supervisor", "--dir", str(directory)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    log.close()
    (directory / "supervisor.pid").write_text(str(proc.pid))
    started = time.monotonic()
    while not (directory / "ready").exists():
        if proc.poll() is not None:
            raise click.ClickException(
                f"the control plane failed to start (exit {proc.returncode}); "
                f"{directory / 'supervisor.log'}:\n{process.log_tail(directory / 'supervisor.log')}"
            )
        if time.monotonic() - started > UP_TIMEOUT_S:
            process.kill_pid(proc.pid)
            raise click.ClickException(f"the control plane was not ready within {UP_TIMEOUT_S:.0f}s")
        time.sleep(0.2)
    click.echo(f"control plane ready in {time.monotonic() - started:.1f}s (pids in {directory})", err=True)
    click.echo(f"export KUBECONFIG={directory / 'kubeconfig'}")


@cluster.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DIR,
              show_default=True, help="The directory given to `up`.")
def down(directory: Path) -> None:
    """Stop the control plane started by `up`, leaving no process behind."""
    from sriovop.devcluster import process

    directory = directory.resolve()
    pid = _supervisor_pid(directory)
    if pid is not None:
        process.kill_pid(pid, grace=30.0)
    try:
        children = json.loads((directory / "state.json").read_text())["pids"].values()
    except (FileNotFoundError, ValueError, KeyError):
        children = []
    for child in children:
        if child and process.pid_alive(int(child)):
            process.kill_pid(int(child))
    (directory / "supervisor.pid").unlink(missing_ok=True)
    click.echo("stopped" if pid is not None else "not running", err=True)
