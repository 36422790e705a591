"""`sriovop dev`: a local control plane for trying sriovop and for its tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click

from sriovop.commands._dev_images import images
from sriovop.hollow.command import hollow_nodes

DEFAULT_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / "sriovop-dev"
UP_TIMEOUT_S = 120.0
UP_WITH_NODES_TIMEOUT_S = 420.0
# A QEMU guest node under TCG: boot, import its image archives (minutes for the Python images), join.
VM_NODE_JOIN_TIMEOUT_S = 1800.0
DOWN_GRACE_S = 180.0


@click.group()
def command() -> None:
    """Development helpers: a local control plane, optionally with kubelet nodes."""


command.add_command(images)
command.add_command(hollow_nodes)


@command.group()
def cluster() -> None:
    """Start or stop a local cluster: kube-apiserver + etcd (RBAC on, admin client cert), and with
    --nodes N also kube-controller-manager, kube-scheduler, Service routing and N kubelet nodes."""


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
@click.option("--nodes", type=click.IntRange(0, 16), default=0, show_default=True,
              help="Kubelet nodes to run (sriovop-node-1..N, each with its own containerd, cgroup root and "
                   "pod bridge; node 1 has the control-plane role). 0: only kube-apiserver and etcd.")
@click.option("--audit-policy", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A kube-apiserver audit policy file (audit.k8s.io/v1 Policy); the audit log is written "
                   "to DIR/audit.log (JSON lines), e.g. to check which requests RBAC refused.")
@click.option("--vm-nodes", type=click.IntRange(0, 1), default=0, show_default=True,
              help="QEMU guest nodes after the host nodes (sriovop-vm-1: an emulated Intel 82576 with the real "
                   "igb/igbvf drivers, hack/vm/). Needs --nodes 1 or more; one guest per machine.")
@click.option("--vm-image", "vm_images", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="An image archive (OCI tar, e.g. build/images/config-daemon.tar) imported into the guest "
                   "node's containerd at boot, besides pause; repeatable. `dev images load` reaches host "
                   "nodes only.")
def up(directory: Path, nodes: int, audit_policy: Path | None, vm_nodes: int, vm_images: tuple[Path, ...]) -> None:
    """Start the cluster in the background and print the KUBECONFIG to use.

    Binaries come from the caches that hack/build-control-plane.sh and hack/build-node-components.sh
    fill (built on first use). With --nodes it returns once every node is Ready, with --vm-nodes once
    the guest node is Ready too (minutes under TCG). On a slow machine (an emulated guest),
    SRIOVOP_DEV_TIMEOUT_SCALE=N multiplies every start-up deadline by N.
    """
    from sriovop.devcluster.guestnodes import check_count

    try:
        check_count(vm_nodes, nodes)
    except ValueError as e:
        raise click.BadParameter(str(e).removeprefix("--vm-nodes: "), param_hint="--vm-nodes") from None
    if vm_images and not vm_nodes:
        raise click.BadParameter("given without --vm-nodes: there is no guest to import it into",
                                 param_hint="--vm-image")
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if _supervisor_pid(directory) is not None and (directory / "ready").exists():
        click.echo(f"export KUBECONFIG={directory / 'kubeconfig'}")
        return
    click.echo("building or locating kube-apiserver and etcd ...", err=True)
    from sriovop.devcluster import find_binaries, process, teardown  # here: `sriovop dev --help` stays fast
    from sriovop.devcluster.binaries import find_node_binaries
    from sriovop.devcluster.deadlines import scaled

    find_binaries()
    if nodes:
        click.echo("building or locating kubelet, kube-controller-manager, kube-scheduler, crictl ...", err=True)
        find_node_binaries()
    try:
        timeout = scaled(UP_WITH_NODES_TIMEOUT_S if nodes else UP_TIMEOUT_S) + vm_nodes * VM_NODE_JOIN_TIMEOUT_S
    except ValueError as e:  # the scale's own message names the variable and what it expects
        raise click.ClickException(str(e)) from None
    log_path = directory / "supervisor.log"
    shown = log_path.stat().st_size if log_path.exists() else 0
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    audit = ["--audit-policy", str(audit_policy.resolve())] if audit_policy is not None else []
    vm = ["--vm-nodes", str(vm_nodes)] if vm_nodes else []
    for archive in vm_images:
        vm += ["--vm-image", str(archive.resolve())]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sriovop.devcluster.supervisor", "--dir", str(directory), "--nodes", str(nodes),
         *audit, *vm],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    log.close()
    (directory / "supervisor.pid").write_text(str(proc.pid))
    started = time.monotonic()
    while not (directory / "ready").exists():
        shown = _show_progress(log_path, shown)
        if proc.poll() is not None:
            raise click.ClickException(
                f"the cluster failed to start (exit {proc.returncode}); "
                f"{directory / 'supervisor.log'}:\n{process.log_tail(directory / 'supervisor.log')}"
            )
        if time.monotonic() - started > timeout:
            process.kill_pid(proc.pid, grace=DOWN_GRACE_S)
            teardown.cleanup(directory)
            raise click.ClickException(
                f"the cluster was not ready within {timeout:.0f}s; {directory / 'supervisor.log'}:\n"
                f"{process.log_tail(directory / 'supervisor.log')}"
            )
        time.sleep(0.2)
    _show_progress(log_path, shown)
    what = f"cluster with {nodes} node(s)" if nodes else "control plane"
    what += f" and {vm_nodes} QEMU guest node(s)" if vm_nodes else ""
    click.echo(f"{what} ready in {time.monotonic() - started:.1f}s (pids and logs in {directory})", err=True)
    click.echo(f"export KUBECONFIG={directory / 'kubeconfig'}")


def _show_progress(log_path: Path, shown: int) -> int:
    """Echo the supervisor's new log lines to stderr (its start takes seconds to minutes); returns the
    offset read so far."""
    try:
        with open(log_path, "rb") as f:
            f.seek(shown)
            data = f.read()
    except FileNotFoundError:
        return shown
    complete = data[: data.rfind(b"\n") + 1]
    for line in complete.decode(errors="replace").splitlines():
        click.echo(f"  {line}", err=True)
    return shown + len(complete)


@cluster.command()
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DIR,
              show_default=True, help="The directory given to `up`.")
def down(directory: Path) -> None:
    """Stop the cluster started by `up`, leaving no process, mount, bridge, iptables rule or cgroup behind
    (nor a QEMU guest node: the supervisor stops it; one that outlived a killed supervisor is killed here)."""
    from sriovop.devcluster import guestnodes, process, teardown

    directory = directory.resolve()
    pid = _supervisor_pid(directory)
    if pid is not None:
        process.kill_pid(pid, grace=DOWN_GRACE_S)
    try:
        children = json.loads((directory / "state.json").read_text())["pids"].values()
    except (FileNotFoundError, ValueError, KeyError):
        children = []
    for child in children:
        if child and process.pid_alive(int(child)):
            process.kill_pid(int(child))
    for guest in guestnodes.kill_leftovers(directory):
        click.echo(f"killed the QEMU guest node's process group {guest}", err=True)
    teardown.cleanup(directory)
    (directory / "supervisor.pid").unlink(missing_ok=True)
    click.echo("stopped" if pid is not None else "not running", err=True)


@cluster.command("restart-kubelet")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DIR,
              show_default=True, help="The directory given to `up`.")
@click.option("--node", required=True, help="The node whose kubelet restarts, e.g. sriovop-node-1.")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds to wait for the restart.")
def restart_kubelet(directory: Path, node: str, timeout: float) -> None:
    """Restart one node's kubelet (same configuration and ports); returns when the new one is running.

    The cluster's supervisor owns the kubelet (a kubelet that exits otherwise stops the cluster), so the
    request goes to it through a file."""
    from sriovop.devcluster.supervisor import RESTART_KUBELET_REQUEST

    directory = directory.resolve()
    if _supervisor_pid(directory) is None:
        raise click.ClickException(f"no cluster is running in {directory}")
    node_dir = directory / "nodes" / node
    if not node_dir.is_dir():
        raise click.ClickException(f"no node {node!r} in {directory / 'nodes'}")
    request = node_dir / RESTART_KUBELET_REQUEST
    request.write_text("")
    started = time.monotonic()
    while True:
        try:
            text = request.read_text()
        except FileNotFoundError:
            break
        if text.startswith("error:"):
            request.unlink(missing_ok=True)
            raise click.ClickException(f"restarting the kubelet of {node} failed: {text[6:].strip()}")
        if time.monotonic() - started > timeout:
            request.unlink(missing_ok=True)
            raise click.ClickException(f"the kubelet of {node} was not restarted within {timeout:.0f}s")
        time.sleep(0.2)
    click.echo(f"kubelet of {node} restarted in {time.monotonic() - started:.1f}s", err=True)
