"""Start, fault and stop a hollow fleet: Node objects, host processes and daemon processes.

```
fleet = HollowFleet(directory, kubeconfig, count=500, per_process=50, apply_delay=20.0)
fleet.start()                  # Nodes registered, every host up, every daemon's informers synced
fleet.kill_daemons(0)          # SIGKILL slice 0's daemons (their hosts keep their state)
fleet.start_daemons(0)         # ... and start them again
fleet.stop()                   # processes, network namespaces, host roots and the Node objects
```
Every step records its pids and the fleet's prefix in DIR/hollow.json, so `stop_recorded(DIR)` (the
command's --stop) can clean up after a supervisor that was killed. Workers die with the supervisor
(PR_SET_PDEATHSIG); what a SIGKILLed host process leaves (its network namespace) is removed by stop.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from pyroute2 import netns

from sriovop.devcluster import process
from sriovop.hollow.capacity import check_threads
from sriovop.hollow.fleet import DEFAULT_PREFIX, FLEET_LABEL, HollowNode, fleet
from sriovop.hollow.worker import HOSTS_DIR
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import Conflict, ConnectionFailed, NotFound
from sriovop.runtime.kinds import NODE
from sriovop.sim.endpoint import read_endpoint

log = structlog.get_logger(__name__)

STATE_FILE = "hollow.json"
#: Concurrent Node creates and deletes (the API server's default max-mutating-requests-inflight is 200).
WRITERS = 16
#: Host processes built at once, and daemons processes started at once: building a host is mostly
#: kernel work (netns, veths) and file writes; starting a daemon is TLS, lists and its first pass. The
#: daemons of a batch start only once the previous batch's have synced, so batches of starting daemons
#: never pile up (they had kept a 5,000-node start in the kernel). Pacing alone did not bring 5,000
#: nodes up on 2 cores with the daemons' drift check at its shipped 30 s; with the hubs' streams no
#: longer waking to look at their hub (fanout.BREAK_CHECK) it did: docs/rollout.md, "Where a daemon's
#: CPU goes at rest", items 3-7, has each attempt's figures.
PARALLEL_BUILDS = 4


@dataclass
class Slice:
    index: int
    first: int
    count: int
    sims: Any = None
    daemons: Any = None


@dataclass
class HollowFleet:
    directory: Path
    kubeconfig: Path
    count: int
    per_process: int = 100
    apply_delay: float = 0.0
    prefix: str = DEFAULT_PREFIX
    namespace: str = "sriov-network-operator"
    requeue_after: float = 30.0
    #: The worker's --clients: "shared" (one API client and one watch per collection per daemons
    #: process) or "per-daemon" (each daemon its own client and watches, as on real nodes).
    clients: str = "shared"
    #: Pool label values by consecutive node ranges, e.g. {"bulk": 490, "canary": 10}.
    pools: dict[str, int] = field(default_factory=dict)
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
    slices: list[Slice] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"count: must be at least 1, got {self.count}")
        if self.per_process < 1:
            raise ValueError(f"per_process: must be at least 1, got {self.per_process}")
        if self.apply_delay < 0:
            raise ValueError(f"apply_delay: must not be negative, got {self.apply_delay}")
        if self.pools and sum(self.pools.values()) != self.count:
            raise ValueError(f"pools: sizes add up to {sum(self.pools.values())}, not the count {self.count}")
        self.directory = Path(self.directory).resolve()
        self.nodes = fleet(self.count, self.prefix)
        self.slices = [Slice(i, first, min(self.per_process, self.count - first))
                       for i, first in enumerate(range(0, self.count, self.per_process))]
        self.client = Client(load_config(str(self.kubeconfig)))

    # -- pools -------------------------------------------------------------------------------------
    def pool_of(self, node: HollowNode) -> str | None:
        end = 0
        for name, size in self.pools.items():
            end += size
            if node.index < end:
                return name
        return None

    # -- start -------------------------------------------------------------------------------------
    def start(self, timeout: float = 1800.0) -> HollowFleet:
        check_threads(self.count)  # before anything is registered: nothing to undo
        started = time.monotonic()
        (self.directory / "logs").mkdir(parents=True, exist_ok=True)
        (self.directory / "ready").mkdir(parents=True, exist_ok=True)
        self._record()
        self.register()
        self.say(f"hollow: {self.count} Nodes registered ({time.monotonic() - started:.0f}s)")
        pending = list(self.slices)
        starting: list[Slice] = []
        while pending:
            batch, pending = pending[:PARALLEL_BUILDS], pending[PARALLEL_BUILDS:]
            for s in batch:
                self._start_sims(s)
            self._wait_ready([(s, "sims") for s in batch], started + timeout)
            # One batch of daemons starts at a time, while the next batch's hosts build: batches that
            # start on top of each other keep the machine in the kernel (see PARALLEL_BUILDS).
            self._wait_ready([(s, "daemons") for s in starting], started + timeout)
            for s in batch:
                self.start_daemons(s.index, wait=False)
            starting = batch
            done = sum(s.count for s in self.slices if s.daemons is not None)
            self.say(f"hollow: {done}/{self.count} hosts up, their daemons starting "
                     f"({time.monotonic() - started:.0f}s)")
        self._wait_ready([(s, "daemons") for s in self.slices], started + timeout)
        self.say(f"hollow: {self.count} daemons running in {len(self.slices)} processes "
                 f"({time.monotonic() - started:.0f}s)")
        return self

    def register(self) -> None:
        def create(node: HollowNode) -> None:
            obj = node.node_object(self.pool_of(node))
            try:
                self.client.create(NODE, obj)
            except Conflict:
                self.client.patch(NODE, node.name, {"metadata": {"labels": obj["metadata"]["labels"]}})

        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(create, self.nodes))

    def _argv(self, role: str, s: Slice) -> list[str]:
        return [sys.executable, "-m", "sriovop.hollow.worker", role, "--dir", str(self.directory),
                "--prefix", self.prefix, "--first", str(s.first), "--count", str(s.count),
                "--ready-file", str(self._ready_file(role, s))]

    def _ready_file(self, role: str, s: Slice) -> Path:
        return self.directory / "ready" / f"{role}-{s.index}.json"

    def _start_sims(self, s: Slice) -> None:
        self._ready_file("sims", s).unlink(missing_ok=True)
        argv = [*self._argv("sims", s), "--apply-delay", str(self.apply_delay)]
        s.sims = process.spawn(argv, self.directory / "logs" / f"sims-{s.index}.log")
        self._record()

    def start_daemons(self, index: int, wait: bool = True, timeout: float = 600.0) -> None:
        s = self.slices[index]
        self._ready_file("daemons", s).unlink(missing_ok=True)
        argv = [*self._argv("daemons", s), "--kubeconfig", str(self.kubeconfig), "--namespace", self.namespace,
                "--requeue-after", str(self.requeue_after), "--clients", self.clients]
        s.daemons = process.spawn(argv, self.directory / "logs" / f"daemons-{s.index}.log")
        self._record()
        if wait:
            self._wait_ready([(s, "daemons")], time.monotonic() + timeout)

    def wait_daemons(self, timeout: float = 600.0) -> None:
        """Until every running daemons process has reported its slice up (after start_daemons(wait=False))."""
        self._wait_ready([(s, "daemons") for s in self.slices if s.daemons is not None], time.monotonic() + timeout)

    def kill_daemons(self, index: int) -> None:
        """SIGKILL a slice's daemons process (a crash: no clean-up of theirs runs)."""
        s = self.slices[index]
        if s.daemons is not None:
            s.daemons.kill()
            s.daemons.wait(30)

    def _wait_ready(self, waiting: Sequence[tuple[Slice, str]], deadline: float) -> None:
        todo = list(waiting)
        while todo:
            for s, role in list(todo):
                proc = getattr(s, role)
                if self._ready_file(role, s).exists():
                    todo.remove((s, role))
                elif proc.poll() is not None:
                    log_path = self.directory / "logs" / f"{role}-{s.index}.log"
                    raise RuntimeError(f"hollow {role} process {s.index} exited with {proc.returncode}; "
                                       f"{log_path}:\n{process.log_tail(log_path)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"hollow: {len(todo)} worker processes not ready in time: "
                                   f"{[f'{role}-{s.index}' for s, role in todo][:10]}")
            time.sleep(0.2)

    def check_alive(self) -> None:
        for s in self.slices:
            for role in ("sims", "daemons"):
                proc = getattr(s, role)
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"hollow {role} process {s.index} exited with {proc.returncode}")

    # -- stop --------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Daemons first (so none writes after its Node is gone), then hosts, then the Node objects."""
        self.say(f"hollow: stopping {len(self.slices)} daemon and host processes")
        for role in ("daemons", "sims"):
            procs = [getattr(s, role) for s in self.slices if getattr(s, role) is not None]
            for proc in procs:
                if proc.poll() is None:
                    proc.terminate()
            for proc in procs:
                process.terminate(proc, grace=90.0)
        try:
            cleanup(self.directory, self.client, self.prefix, self.say)
        finally:
            self.client.close()

    def _record(self) -> None:
        pids = [p.pid for s in self.slices for p in (s.daemons, s.sims) if p is not None]
        state = {"prefix": self.prefix, "kubeconfig": str(self.kubeconfig), "count": self.count, "pids": pids}
        (self.directory / STATE_FILE).write_text(json.dumps(state))


class FleetNodesLeft(RuntimeError):
    """The clean-up could not reach the API server: the fleet's Node objects are still registered."""


def cleanup(directory: Path, client: Client, prefix: str, say: Callable[[str], None]) -> int:
    """Remove what a fleet leaves: network namespaces of its hosts, their roots, its Node objects.
    Returns how many Nodes were deleted; raises FleetNodesLeft when the API server cannot be reached."""
    hosts = directory / HOSTS_DIR
    for root in sorted(hosts.iterdir()) if hosts.is_dir() else []:
        info = read_endpoint(root)
        if info and info.get("netns"):
            try:
                netns.remove(str(info["netns"]))
            except OSError:
                pass  # removed by its own process already
    shutil.rmtree(hosts, ignore_errors=True)

    def delete(name: str) -> None:
        try:
            client.delete(NODE, name)
        except NotFound:
            pass

    try:
        names = [n["metadata"]["name"] for n in client.list(NODE, label_selector={FLEET_LABEL: prefix})]
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(delete, names))
    except ConnectionFailed as exc:
        # The record stays, so `--stop` can delete the Nodes once the API server is back.
        raise FleetNodesLeft(f"the fleet's processes, host roots and network namespaces are gone, but its Node "
                             f"objects (label {FLEET_LABEL}={prefix}) could not be deleted: {exc}; run --stop "
                             f"again once the API server answers") from exc
    say(f"hollow: deleted {len(names)} Nodes, host roots and network namespaces")
    (directory / STATE_FILE).unlink(missing_ok=True)
    shutil.rmtree(directory / "ready", ignore_errors=True)
    return len(names)


def stop_recorded(directory: Path, say: Callable[[str], None]) -> bool:
    """`--stop`: end the processes DIR/hollow.json records, then clean up. False when nothing is recorded."""
    directory = Path(directory).resolve()
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return False
    for pid in state.get("pids", []):
        if process.pid_alive(int(pid)):
            process.kill_pid(int(pid), grace=90.0)
    client = Client(load_config(str(state["kubeconfig"])))
    try:
        cleanup(directory, client, str(state["prefix"]), say)
    finally:
        client.close()
    return True
