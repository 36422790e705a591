"""`sriovop demo`: the whole operator on one machine, with simulated SR-IOV nodes; `sriovop demo pod`: a pod
with a real VF on the QEMU guest node (commands/_demo_pod.py)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click

from sriovop.commands._demo_pod import command as pod_command
from sriovop.exitcodes import NoAnswer


@click.group(invoke_without_command=True)
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/tmp/sriovop-demo"), show_default=True,
              help="Where the control plane, simulated hosts, certificates and logs go (replaced at start). "
                   "A non-empty directory that the demo did not create is refused unless --reuse.")
@click.option("--reuse", is_flag=True, help="Use --dir even if it holds files the demo did not create.")
@click.option("--once", is_flag=True, help="Exit after convergence instead of running until Ctrl-C.")
@click.option("--replicas", type=click.IntRange(1, 5), default=2, show_default=True,
              help="Operator replicas (leader election picks one).")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="Seconds to wait for discovery and for convergence.")
@click.option("--least-privilege", is_flag=True,
              help="Install manifests/rbac/ and run the operator, webhook and config daemons as their own "
                   "ServiceAccount users, bound to exactly the deployment's roles (default: admin).")
@click.pass_context
def command(ctx: click.Context, directory: Path, reuse: bool, once: bool, replicas: int, timeout: float,
            least_privilege: bool) -> None:
    """Run the local demo: control plane, webhook, operators, two simulated nodes, a policy and a network.

    It shows progress until every node reports Succeeded, prints `sriovop status`, and then keeps
    everything running for exploration until Ctrl-C (or exits at once with --once). Nothing is left
    running when it ends. `sriovop demo pod` is the QEMU guest's demo: a pod with a real igbvf VF.
    """
    if ctx.invoked_subcommand is not None:
        return
    from sriovop.demo.runner import NS, Demo  # imported here: `sriovop demo --help` stays fast
    from sriovop.demo.workdir import DirectoryInUse, claim
    from sriovop.logsetup import configure_logging

    try:
        claim(directory.resolve(), reuse)
    except DirectoryInUse as exc:
        raise NoAnswer(str(exc)) from None

    configure_logging("warning", "console")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    demo = Demo(directory.resolve(), click.echo, operator_replicas=replicas, timeout=timeout,
                least_privilege=least_privilege)
    try:
        result = demo.run(stop)
        click.echo("")
        click.echo(result.status_text)
        if not result.converged:
            raise click.ClickException(f"not converged within {timeout:.0f}s; logs in {directory / 'logs'}")
        click.echo(f"converged in {result.seconds:.1f}s. Explore:")
        click.echo(f"  export KUBECONFIG={result.kubeconfig}")
        click.echo(f"  kubectl get sriovnetworknodestates -n {NS}")
        click.echo("  kubectl get network-attachment-definitions -n default demo-net -o yaml")
        click.echo(f"  {_self_command()} status -n {NS}")
        for line in result.metrics_urls:
            name, url = line.rsplit(" ", 1)
            click.echo(f"  curl -s {url}    # {name.rstrip(':')}")
        if not once:
            click.echo("Ctrl-C stops everything.")
            while not stop.wait(0.5):
                demo.procs.check_alive()
    except KeyboardInterrupt:
        click.echo("interrupted")
    except (RuntimeError, TimeoutError, OSError) as exc:
        raise click.ClickException(f"{exc}\n(logs in {directory / 'logs'})") from exc
    finally:
        click.echo("stopping ...")
        demo.stop()


def _self_command() -> str:
    """How to run sriovop again as this process was run: the script's own path (`.venv/bin/sriovop` in a
    fresh clone, where no `sriovop` is on PATH), else the interpreter with the module."""
    script = Path(sys.argv[0])
    if script.name == "sriovop":
        return str(script) if script.parent != Path() else "sriovop"
    return f"{sys.executable} -m sriovop.cli"


command.add_command(pod_command)
