"""`sriovop dev hollow-nodes`: a fleet of hollow nodes against a cluster, until Ctrl-C (or --stop)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sriovop.exitcodes import NoAnswer
from sriovop.runtime.errors import ConnectionFailed

if TYPE_CHECKING:
    from sriovop.hollow.supervisor import HollowFleet

DEFAULT_DIR = Path(os.environ.get("TMPDIR", "/tmp")) / "sriovop-hollow"


def _parse_pools(value: str | None) -> dict[str, int]:
    pools: dict[str, int] = {}
    for part in (value or "").split(","):
        if not part.strip():
            continue
        name, sep, size = part.partition("=")
        if not sep or not name.strip() or not size.strip().isdigit():
            raise click.BadParameter(f"{part!r}: expected NAME=COUNT (e.g. bulk=490,canary=10)", param_hint="--pools")
        pools[name.strip()] = int(size)
    return pools


@click.command("hollow-nodes")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_DIR,
              show_default=True, help="Where the simulated hosts, worker logs and the fleet's record go.")
@click.option("--count", type=click.IntRange(min=1), default=None,
              help="Hollow nodes to register and serve (required unless --stop).")
@click.option("--per-process", type=click.IntRange(min=1), default=100, show_default=True,
              help="Nodes per worker process (each slice has one process of hosts and one of daemons).")
@click.option("--apply-delay", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds each node's numVfs change takes, spent in its sriov_numvfs writes (the "
                   "simulator's numvfs_write_delay).")
@click.option("--requeue-after", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="The daemons' drift re-check period (as the config daemon's flag).")
@click.option("--prefix", default="hollow", show_default=True,
              help="Node names are PREFIX-00000...; also the value of the sriovop.io/hollow-fleet label.")
@click.option("--pools", default=None,
              help="Label consecutive nodes sriovop.io/hollow-pool=NAME, e.g. bulk=490,canary=10 (sizes add up "
                   "to --count), for SriovNetworkPoolConfigs to select.")
@click.option("--clients", type=click.Choice(["shared", "per-daemon"]), default="shared", show_default=True,
              help="shared: the daemons of a worker process share one API client (one connection pool, one "
                   "watch per collection fanned out to each daemon); per-daemon: each its own, as on real nodes.")
@click.option("--namespace", default="sriov-network-operator", show_default=True, help="The operator's namespace.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=lambda: os.environ.get("KUBECONFIG"), help="Defaults to $KUBECONFIG.")
@click.option("--stop", "stop_only", is_flag=True,
              help="Stop the fleet recorded in --dir (processes, hosts, Node objects) and exit.")
def hollow_nodes(directory: Path, count: int | None, per_process: int, apply_delay: float, requeue_after: float,
                 prefix: str, pools: str | None, clients: str, namespace: str, kubeconfig: Path | None,
                 stop_only: bool) -> None:
    """Register COUNT Nodes and run a real config daemon for each on its own simulated host.

    Each daemon is the unchanged sriovop config daemon with its own informers and writes; no
    kubelet runs, so nothing is scheduled on these nodes (drains evict nothing). Runs until Ctrl-C or
    SIGTERM, then removes every process, host and Node it made. Progress goes to stderr.
    """
    from sriovop.hollow.capacity import FleetTooLarge
    from sriovop.hollow.supervisor import FleetNodesLeft, HollowFleet, stop_recorded

    say = lambda line: click.echo(line, err=True)  # noqa: E731
    if stop_only:
        try:
            stopped = stop_recorded(directory, say)
        except FleetNodesLeft as exc:
            raise NoAnswer(str(exc)) from None
        if not stopped:
            click.echo(f"no hollow fleet recorded in {directory}", err=True)
        return
    if count is None:
        raise click.UsageError("--count is required (or --stop)")
    if kubeconfig is None:
        raise click.UsageError("--kubeconfig or $KUBECONFIG is required")
    from sriovop.stopsignals import stop_on_signals

    stop = stop_on_signals("hollow nodes")
    try:
        fleet = HollowFleet(Path(directory), Path(kubeconfig), count, per_process=per_process,
                            apply_delay=apply_delay, prefix=prefix, namespace=namespace, requeue_after=requeue_after,
                            pools=_parse_pools(pools), clients=clients, say=say)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        fleet.start()
        say(f"hollow: {count} nodes running; Ctrl-C stops them and deletes their Nodes")
        while not stop.wait(2.0):
            fleet.check_alive()
    except FleetTooLarge as exc:  # raised before the fleet registered or started anything
        raise NoAnswer(str(exc)) from None
    except ConnectionFailed as exc:
        error = f"the API server did not answer: {exc}"
        _stop(fleet, error)
        raise NoAnswer(error) from None
    except BaseException as exc:
        _stop(fleet, f"{type(exc).__name__}: {exc}")
        raise
    _stop(fleet, None)


def _stop(fleet: HollowFleet, error: str | None) -> None:
    """Stop the fleet. When its Node objects cannot be deleted (the API server is gone), say so and how
    to finish, exit NO_ANSWER as `--stop` does, rather than end in a traceback. `error` is what ended the
    fleet, if anything did: it leads the message, since the new exception replaces it."""
    from sriovop.hollow.supervisor import FleetNodesLeft

    try:
        fleet.stop()
    except FleetNodesLeft as exc:
        raise NoAnswer("; ".join(part for part in (error, str(exc)) if part)) from None
