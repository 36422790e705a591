"""One worker process of the hollow fleet: the simulated hosts of a slice, or the daemons of a slice.

Hosts and daemons of a slice run in two processes so that a daemon can crash without its host: the
fault "daemons killed and restarted" SIGKILLs a daemons process, and the new one finds the hosts as
the old one left them (VFs, applied generation), as a restarted daemon pod finds its real host.

    python -m sriovop.hollow.worker sims    --dir D --prefix P --first I --count K [--apply-delay S]
    python -m sriovop.hollow.worker daemons --dir D --prefix P --first I --count K --kubeconfig F

Each writes --ready-file ({"ready": K, "seconds": ...}) once its slice is up, logs warnings to stderr, and
on SIGTERM stops everything it started (sims: their network namespaces; daemons: their watches).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sriovop.hollow.fleet import PFS, HollowNode

if TYPE_CHECKING:
    from sriovop.sim.host import SimHost

#: Where the hosts of a fleet directory live (one directory per node).
HOSTS_DIR = "hosts"
#: User-Agent of the hollow daemons' API clients, so the API server's audit log can tell them apart.
DAEMON_USER_AGENT = "sriovop-config-daemon/hollow"
#: --clients: one API client for the slice's daemons, or one each.
SHARED, PER_DAEMON = "shared", "per-daemon"
CLIENT_MODES = (SHARED, PER_DAEMON)
#: Seconds between two daemons' starts in one worker process.
START_SPACING = 0.05
#: The workers' GIL switch interval (CPython's default is 0.005 s). A thread waiting for the GIL wakes
#: once per interval to ask for it. At 1,000 nodes, with a hundred daemons of each process busy at once,
#: the machine spent 76% of its time in the kernel, the waiting threads in futex_wait. The daemons'
#: waits (sockets, queues, the simulated NIC's delay) release the GIL whatever the interval, so a
#: longer one only lets a busy daemon run longer before the next takes over.
SWITCH_INTERVAL = 0.05
#: The workers' nice value: the fleet stands in for a thousand other machines, so it must not take the
#: CPU from what is measured (API server, etcd, operator). At 1,000 nodes and nice 0, the operator
#: was starved during the fleet's start-up and lost its lease.
NICENESS = 10
#: How long a worker waits for pyroute2's forked child to hand over a socket inside a host's network
#: namespace (pyroute2: 2 s per child, new children for 10 s). The fleet's start holds the machine's load
#: average in the hundreds: at 5,000 nodes a hosts process forked from 200 threads, its child at nice 10
#: did not answer within those 10 s, and the process died ("could not start netns socket within
#: timeout") at 2,800 hosts. A host that takes longer to build only delays the start.
NETNS_SOCKET_TIMEOUT = 300
NETNS_CHILD_TIMEOUT = 60
#: sriov_numvfs writes in one node's numVfs change: 0, then the new count, on each of its PFs.
NUMVFS_WRITES = 2 * PFS


def host_root(directory: Path, node: HollowNode) -> Path:
    return directory / HOSTS_DIR / node.name


def slow_like_hardware(sim: SimHost, apply_delay: float) -> None:
    """Make a numVfs change on this host take `apply_delay` seconds in the kernel, as on hardware.

    A real `sriov_numvfs` write returns once the PF's VFs exist (the kernel enables SR-IOV inside the
    write), and changing a PF's count is two writes, 0 then the new count. Each of the node's
    NUMVFS_WRITES writes therefore hangs for its share of the delay (the simulator's
    `numvfs_write_delay`), and the daemon finds its VFs on its first look. The simulator's `vf_delay`
    (VFs appearing after a write that returned at once) made the daemon poll for them, and its polls saw
    each PF's VFs up to half a second late: about a second per node and per drain wave that no NIC
    spends and that the rollout's ideal does not count."""
    if apply_delay > 0:
        for pf in sim.pfs:
            sim.fault(pf.pci, numvfs_write_delay=apply_delay / NUMVFS_WRITES)


def _as_a_background_fleet() -> None:
    """What every worker process does first: raise its fd limit, lengthen its GIL switch interval, lower
    its CPU priority (SWITCH_INTERVAL, NICENESS) and wait longer for namespace sockets."""
    _raise_fd_limit()
    sys.setswitchinterval(SWITCH_INTERVAL)
    os.nice(NICENESS)
    _patient_netns_sockets()


def _patient_netns_sockets() -> None:
    """pyroute2 opens a socket in a named namespace by forking a child that enters it; wait for that
    child as long as a loaded machine needs (NETNS_SOCKET_TIMEOUT, NETNS_CHILD_TIMEOUT)."""
    from pyroute2 import config

    config.default_create_socket_timeout = NETNS_SOCKET_TIMEOUT
    config.default_communicate_timeout = NETNS_CHILD_TIMEOUT


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _quiet_logs() -> None:
    from sriovop.logsetup import configure_logging

    configure_logging("warning", "json")


def _announce(ready_file: Path, count: int, started: float) -> None:
    """Written atomically once the slice is up: the supervisor waits for this file."""
    tmp = ready_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"ready": count, "seconds": round(time.monotonic() - started, 1)}))
    tmp.replace(ready_file)


@click.group()
def cli() -> None:
    """A slice of the hollow fleet."""


def _slice_options(fn):  # type: ignore[no-untyped-def]
    for option in reversed([
        click.option("--dir", "directory", required=True, type=click.Path(file_okay=False, path_type=Path)),
        click.option("--prefix", required=True),
        click.option("--first", type=int, required=True),
        click.option("--count", type=int, required=True),
        click.option("--ready-file", required=True, type=click.Path(dir_okay=False, path_type=Path)),
    ]):
        fn = option(fn)
    return fn


@cli.command()
@_slice_options
@click.option("--apply-delay", type=float, default=0.0,
              help="Seconds one node's numVfs change takes: each of its sriov_numvfs writes (0, then the new "
                   "count, per PF) hangs for its share (the simulator's numvfs_write_delay fault), as on "
                   "hardware that takes seconds to create VFs.")
def sims(directory: Path, prefix: str, first: int, count: int, ready_file: Path, apply_delay: float) -> None:
    """Build and serve the simulated hosts of nodes first..first+count-1 until SIGTERM."""
    from sriovop.sim.host import SimHost
    from sriovop.stopsignals import stop_on_signals

    _as_a_background_fleet()
    _quiet_logs()
    stop = stop_on_signals("hollow sims")
    started = time.monotonic()
    hosts: list[SimHost] = []
    try:
        for index in range(first, first + count):
            node = HollowNode(prefix, index)
            root = host_root(directory, node)
            sim = SimHost(root, [f"{node.model}:{PFS}"], pf_names=node.pf_names).start()
            hosts.append(sim)
            slow_like_hardware(sim, apply_delay)
            if stop.is_set():
                return
        _announce(ready_file, len(hosts), started)
        stop.wait()
    finally:
        for sim in hosts:
            sim.stop()


@cli.command()
@_slice_options
@click.option("--kubeconfig", required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--namespace", default="sriov-network-operator", show_default=True)
@click.option("--requeue-after", type=float, default=30.0, show_default=True,
              help="The daemons' drift re-check period (the config daemon's --requeue-after).")
@click.option("--clients", type=click.Choice(CLIENT_MODES), default=SHARED, show_default=True,
              help=f"{SHARED}: the slice's daemons share one API client (one connection pool, one watch per "
                   f"collection fanned out to each daemon's informers, sriovop.hollow.fanout); {PER_DAEMON}: "
                   "each daemon has its own client, connections and three watches, as on real nodes.")
def daemons(directory: Path, prefix: str, first: int, count: int, ready_file: Path, kubeconfig: str,
            namespace: str, requeue_after: float, clients: str) -> None:
    """Run one unchanged config daemon per node of the slice until SIGTERM."""
    from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
    from sriovop.daemon.app import Daemon
    from sriovop.daemon.settings import DaemonSettings
    from sriovop.hollow.fanout import FanoutClient
    from sriovop.runtime.config import load_config
    from sriovop.sim.access import SimKernelAccess
    from sriovop.stopsignals import stop_on_signals

    _as_a_background_fleet()
    _quiet_logs()
    stop = stop_on_signals("hollow daemons")
    started = time.monotonic()
    running: list[tuple[Daemon, threading.Thread]] = []
    shared: FanoutClient | None = None
    if clients == SHARED:
        rest = load_config(kubeconfig)
        rest.user_agent = DAEMON_USER_AGENT
        # Watches hold a connection each while open; the rest of the pool serves every daemon's requests.
        rest.max_connections = max(rest.max_connections, 2 * count)
        # The slice's NodeStates are the only ones its daemons read: the others' events stay undecoded.
        names = [HollowNode(prefix, index).name for index in range(first, first + count)]
        shared = FanoutClient(rest, names={SRIOV_NETWORK_NODE_STATE.plural: names})
    for index in range(first, first + count):
        node = HollowNode(prefix, index)
        root = host_root(directory, node)
        settings = DaemonSettings(node_name=node.name, namespace=namespace, host_root=root,
                                  requeue_after=requeue_after)
        if shared is not None:
            daemon = Daemon(settings, shared, kernel=SimKernelAccess(root))
        else:
            rest = load_config(kubeconfig)
            rest.user_agent = DAEMON_USER_AGENT
            daemon = Daemon(settings, rest, kernel=SimKernelAccess(root))
        thread = threading.Thread(target=_run_daemon, args=(daemon, stop, shared is None),
                                  name=f"daemon-{node.name}", daemon=True)
        thread.start()
        running.append((daemon, thread))
        # Spread the start-up: a hundred TLS handshakes and informer lists at once from one process on
        # a busy machine run past the API server's handshake timeout and all retry together.
        if stop.wait(START_SPACING):
            break
    while not stop.is_set() and not all(d.started.is_set() for d, _ in running):
        stop.wait(0.2)
    if not stop.is_set():
        _announce(ready_file, len(running), started)
    stop.wait()
    deadline = time.monotonic() + 60
    for _daemon, thread in running:
        thread.join(max(0.1, deadline - time.monotonic()))
    if shared is not None:
        shared.close()


def _run_daemon(daemon: object, stop: threading.Event, own_client: bool) -> None:
    from sriovop.daemon.app import Daemon
    from sriovop.daemon.startup import StartupAborted

    assert isinstance(daemon, Daemon)
    try:
        daemon.run(stop)
    except StartupAborted:
        pass
    finally:
        if own_client:
            daemon.client.close()


if __name__ == "__main__":
    cli()
