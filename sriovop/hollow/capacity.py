"""Whether the kernel lets a hollow fleet start all its threads, asked before anything is registered.

Every thread takes a task ID from the kernel's PID space. A hollow daemon runs about ten threads (its
informers' watches and handlers, its workqueue's, its event recorder) and its simulated host about
two, so a fleet needs about `THREADS_PER_NODE` tasks per node. The usual `kernel.pid_max` of 32,768
is used up near 2,700 nodes: a fleet asked for 5,000 died there with "can't start new thread" in a
host process, seven minutes into its start. The supervisor asks first and names the setting.
"""

from __future__ import annotations

from pathlib import Path

#: Tasks per hollow node, measured on a running fleet: about 10 per daemon (1,006 threads in a daemons
#: process of 100 at rest) and 1.8 per simulated host (180 in a hosts process of 100), rounded up.
THREADS_PER_NODE = 12
#: Tasks left for everything else on the machine (the control plane, the operator, the shell).
HEADROOM = 2000


class FleetTooLarge(RuntimeError):
    """The kernel would refuse the fleet's threads part way through its start."""


def _read_int(path: Path) -> int:
    return int(path.read_text().split()[0])


def tasks_now(proc: Path = Path("/proc")) -> int:
    """The tasks (threads) that exist now: the fourth field of /proc/loadavg is running/total."""
    return int((proc / "loadavg").read_text().split()[3].split("/")[1])


def check_threads(count: int, proc: Path = Path("/proc")) -> None:
    """Raise FleetTooLarge when `count` more nodes would pass kernel.pid_max or kernel.threads-max."""
    need = count * THREADS_PER_NODE
    existing = tasks_now(proc)
    for setting in ("pid_max", "threads-max"):
        limit = _read_int(proc / "sys" / "kernel" / setting)
        if existing + need + HEADROOM > limit:
            raise FleetTooLarge(
                f"count: {count} hollow nodes need about {need} threads ({THREADS_PER_NODE} per node) and "
                f"{existing} tasks exist, but kernel.{setting} is {limit}; raise it "
                f"(sysctl -w kernel.{setting}={max(2 * (existing + need + HEADROOM), 65536)}) or start fewer nodes")
