"""QEMU guest nodes of a dev cluster (`sriovop dev cluster up --nodes N --vm-nodes 1`).

The cluster's supervisor boots the guest (an emulated Intel 82576 with the real igb/igbvf drivers) once
the host nodes are Ready, joins it as the last node (vmnode.py, the code `make e2e-node` uses) and owns
it: the guest stops with the supervisor. What other processes need is in `DIR/vm-nodes.json`: per node
the pid of QEMU's wrapper (its own process group, which `down` kills when the supervisor is gone), the
job share (where GuestShell requests go), the console file and the seconds from boot to Ready
(`join_s`). One guest at most: the guest's addresses and pod subnet are fixed, and a guest under TCG
takes the machine's cores.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from sriovop.devcluster import process
from sriovop.devcluster.vmguest import RunningGuest
from sriovop.devcluster.vmnode import NODE_NAME, ClusterAccess, join, keep_logs, node_vm, start_node
from sriovop.runtime.client import Client

log = structlog.get_logger("devcluster")

STATE_FILE = "vm-nodes.json"
NODE_STEP = "SRIOVOP-NODE:"  # hack/vm/node.sh's progress lines on the console
MAX_VM_NODES = 1
# A dev cluster's guest lives until `down`; run.sh kills QEMU after this many seconds regardless.
GUEST_LIFETIME_S = 7 * 24 * 3600


def check_count(vm_nodes: int, nodes: int) -> None:
    """Refuse a count the guest cannot have, naming the option and the reason."""
    if not 0 <= vm_nodes <= MAX_VM_NODES:
        raise ValueError(f"--vm-nodes: expected 0..{MAX_VM_NODES}, got {vm_nodes} (one QEMU guest per machine)")
    if vm_nodes and nodes < 1:
        raise ValueError("--vm-nodes: needs --nodes 1 or more (the controller manager, scheduler and the "
                         "operator's control-plane node run on the host)")


def vm_dir(directory: Path, name: str) -> Path:
    return directory / "vm" / name


@dataclass(frozen=True)
class AttachedGuest:
    """A guest node owned by another process (the supervisor), as GuestShell needs it."""

    name: str
    job: Path
    console_file: Path
    pid: int

    @property
    def console(self) -> str:
        return self.console_file.read_text(errors="replace") if self.console_file.exists() else ""

    @property
    def running(self) -> bool:
        """The recorded pid is alive and still QEMU's wrapper (not a pid reused since)."""
        try:
            argv = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            return False
        return process.pid_alive(self.pid) and any(a.endswith(b"hack/vm/run.sh") for a in argv)


def attached(directory: Path) -> list[AttachedGuest]:
    """The guest nodes the supervisor in `directory` recorded (none without --vm-nodes)."""
    try:
        state = json.loads((directory / STATE_FILE).read_text())
    except FileNotFoundError:
        return []
    return [AttachedGuest(name, Path(node["job"]), Path(node["console"]), int(node["pid"]))
            for name, node in state.items()]


class GuestNodes:
    """The guest nodes one supervisor runs."""

    def __init__(self, directory: Path, count: int, images: list[Path]) -> None:
        self.dir = directory
        self.count = count
        self.images = images
        self.guests: dict[str, RunningGuest] = {}
        self.join_seconds: dict[str, float] = {}

    def start(self, kube: Client, service_ip: str) -> None:
        """Boot and join each guest node; returns once it is Ready, schedulable and labelled a worker."""
        access = ClusterAccess(self.dir, service_ip)
        for index in range(1, self.count + 1):
            name = NODE_NAME if index == 1 else f"sriovop-vm-{index}"
            home = vm_dir(self.dir, name)
            home.mkdir(parents=True, exist_ok=True)
            console = home / "console.log"
            console.write_text("")
            log.info("booting the QEMU guest node", node=name, images=len(self.images))
            guest = start_node(node_vm(access, self.images, name=name), timeout=GUEST_LIFETIME_S,
                               console_log=console)
            self.guests[name] = guest
            self._record()
            joined = threading.Event()
            threading.Thread(target=_echo_steps, args=(guest, name, joined), daemon=True).start()
            try:
                seconds = join(kube, guest, name)
            finally:
                joined.set()
            self.join_seconds[name] = round(seconds, 1)
            self._record()
            log.info("the QEMU guest node is Ready", node=name, seconds=round(seconds, 1))

    def _record(self) -> None:
        state = {name: {"pid": g.pid, "job": str(g.job), "console": str(vm_dir(self.dir, name) / "console.log"),
                        "join_s": self.join_seconds.get(name)} for name, g in self.guests.items()}
        (self.dir / STATE_FILE).write_text(json.dumps(state, indent=2))

    def dead(self) -> str | None:
        for name, guest in self.guests.items():
            if not guest.running:
                return f"the QEMU guest of {name} exited"
        return None

    def stop(self) -> None:
        """Keep each guest's containerd/kubelet logs and console in DIR/vm/<node>/, then stop QEMU."""
        for name, guest in self.guests.items():
            keep_logs(guest, vm_dir(self.dir, name) / "logs")
            guest.kill()
        (self.dir / STATE_FILE).unlink(missing_ok=True)


def _echo_steps(guest: RunningGuest, name: str, done: threading.Event) -> None:
    """Log node.sh's `SRIOVOP-NODE: <step>` console lines as they come: the join takes minutes under TCG
    and `up` shows the supervisor's log as its progress."""
    shown = 0
    while not done.wait(2.0):
        steps = [line.split(NODE_STEP, 1)[1].strip() for line in guest.console.splitlines() if NODE_STEP in line]
        for step in steps[shown:]:
            log.info("guest node step", node=name, step=step)
        shown = len(steps)


def kill_leftovers(directory: Path, grace: float = 10.0) -> list[int]:
    """QEMU wrappers recorded in `directory` that outlived their supervisor (it was killed hard): their
    process groups are killed; returns their pids."""
    killed = []
    for guest in attached(directory):
        if not guest.running:
            continue
        try:
            os.killpg(guest.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + grace
        while process.pid_alive(guest.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        try:  # the wrapper may be gone while QEMU, in its group, is not
            os.killpg(guest.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        killed.append(guest.pid)
    (directory / STATE_FILE).unlink(missing_ok=True)
    return killed
