"""`sriovop demo pod`: a pod with a real VF on the QEMU guest node, step by step with each step's duration.

The cluster is `sriovop dev cluster up --nodes N --vm-nodes 1` (brought up here, or the one running in
--dir reused); the operator and its webhooks come from `make images` through `kubectl apply -k`, as in
`make e2e-node`. The pod's net1 is read where it lives: in the guest, inside the pod's network namespace
(the guest's kubelet cannot be reached from the host for `kubectl exec`), through the guest's request
loop (GuestShell). At the end the demo removes what it made (see podplan.py) unless --keep.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.api.v1.kinds import (
    NETWORK_ATTACHMENT_DEFINITION,
    SRIOV_NETWORK,
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
)
from sriovop.demo import vfpod
from sriovop.demo.podplan import Plan
from sriovop.devcluster.guestnodes import AttachedGuest, attached
from sriovop.devcluster.images.load import load_archives
from sriovop.devcluster.nodecluster import schedulable
from sriovop.devcluster.vmnode import NODE_DIR
from sriovop.devcluster.vmshell import GuestShell
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ConnectionFailed, NotFound
from sriovop.runtime.kinds import NODE, POD

REPO = Path(__file__).resolve().parents[2]
PROGRESS_EVERY_S = 30.0
CONTAINERD_SOCK = NODE_DIR / "containerd.sock"
Say = Callable[[str], None]


class DemoFailed(RuntimeError):
    """A step did not get where it should within the deadline; the message names the step."""


@dataclass
class Outcome:
    durations: list[tuple[str, float]] = field(default_factory=list)
    link: str = ""
    ethtool: str = ""
    driver_sysfs: str = ""
    network_status: str = ""


def wait_for(say: Say, what: str, probe: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    """Poll `probe` until it returns something true; a line every PROGRESS_EVERY_S shows it is still waiting."""
    started = time.monotonic()
    shown = started
    while True:
        try:
            value = probe()
        except (NotFound, ConnectionFailed):  # not there yet, or the API server starved by a busy machine
            value = None
        if value:
            return value
        now = time.monotonic()
        if now - started > timeout:
            raise DemoFailed(f"timed out after {timeout:.0f}s waiting for {what}")
        if now - shown >= PROGRESS_EVERY_S:
            say(f"      ... waiting for {what} ({now - started:.0f}s)")
            shown = now
        time.sleep(interval)


def _sriovop(*args: str) -> list[str]:
    return [sys.executable, "-m", "sriovop.cli", *args]


class PodDemo:
    def __init__(self, plan: Plan, say: Say) -> None:
        self.plan = plan
        self.say = say
        self.dir = plan.options.directory
        self.timeout = plan.options.timeout
        self.outcome = Outcome()
        self._kube: Client | None = None
        self._guest: AttachedGuest | None = None

    @property
    def kube(self) -> Client:
        if self._kube is None:
            self._kube = Client(load_config(self.dir / "kubeconfig"))
        return self._kube

    @property
    def guest(self) -> AttachedGuest:
        if self._guest is None:
            [self._guest] = attached(self.dir)
        return self._guest

    def run(self) -> Outcome:
        """Every step of the plan, in order, each timed; the cleanup step runs even when one fails."""
        actions: list[Callable[[], None]] = [
            self._reuse if self.plan.reuse else self._cluster_up, self._load, self._deploy, self._daemon,
            self._policy, self._network, self._pod, self._read]
        cleanup = self._delete_objects if self.plan.reuse else self._cluster_down
        steps = list(zip(self.plan.steps, actions, strict=False))
        total = len(self.plan.steps)
        try:
            for index, (name, action) in enumerate(steps, start=1):
                self._timed(index, total, name, action)
        finally:
            if not self.plan.options.keep:
                self._timed(total, total, self.plan.steps[-1], cleanup)
        return self.outcome

    def _timed(self, index: int, total: int, name: str, action: Callable[[], None]) -> None:
        self.say(f"[{index}/{total}] {name} ...")
        started = time.monotonic()
        action()
        seconds = time.monotonic() - started
        self.outcome.durations.append((name, seconds))
        self.say(f"[{index}/{total}] done in {seconds:.1f}s")

    # ---- the cluster -----------------------------------------------------------------------------
    def _cluster_up(self) -> None:
        args = ["dev", "cluster", "up", "--dir", str(self.dir), "--nodes", str(self.plan.options.nodes),
                "--vm-nodes", "1"]
        for archive in self.plan.guest_images:
            args += ["--vm-image", str(archive)]
        # `up` shows the supervisor's progress (the guest's boot and join) on stderr as it goes.
        done = subprocess.run(_sriovop(*args), stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            raise DemoFailed(f"sriovop dev cluster up failed (exit {done.returncode})")

    def _reuse(self) -> None:
        node = self.kube.get(NODE, self.guest.name)
        if not schedulable(dict(node)):
            raise DemoFailed(f"node {self.guest.name} of the reused cluster is not Ready")

    def _cluster_down(self) -> None:
        subprocess.run(_sriovop("dev", "cluster", "down", "--dir", str(self.dir)), check=False)

    def _load(self) -> None:
        load_archives(self.dir, list(self.plan.host_images))

    def _deploy(self) -> None:
        for kustomization in ("manifests/crds", "manifests"):
            done = subprocess.run(["kubectl", f"--kubeconfig={self.dir / 'kubeconfig'}", "apply", "-k",
                                   str(REPO / kustomization)], capture_output=True, text=True, timeout=300,
                                  check=False)
            if done.returncode != 0:
                raise DemoFailed(f"kubectl apply -k {kustomization}: {done.stderr.strip()}")

    # ---- the operator on the guest ---------------------------------------------------------------
    def _daemon(self) -> None:
        node = self.guest.name

        def ready_daemon() -> bool:
            for p in self.kube.list(POD, vfpod.NAMESPACE, label_selector="app=sriov-network-config-daemon"):
                conditions = (p.get("status") or {}).get("conditions") or []
                if (p.get("spec") or {}).get("nodeName") == node and any(
                        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                    return True
            return False

        wait_for(self.say, f"the config-daemon pod Ready on {node}", ready_daemon, self.timeout)
        wait_for(self.say, "the NodeState reporting the PF", lambda: self._pf(), self.timeout)

    def _pf(self) -> dict[str, Any] | None:
        state = self.kube.get(SRIOV_NETWORK_NODE_STATE, self.guest.name, vfpod.NAMESPACE)
        for iface in (state.get("status") or {}).get("interfaces") or []:
            if iface.get("name") == vfpod.PF_NAME:
                return {"sync": (state.get("status") or {}).get("syncStatus"), **iface}
        return None

    def _policy(self) -> None:
        self._replace(SRIOV_NETWORK_NODE_POLICY, vfpod.policy(self.guest.name), vfpod.NAMESPACE)

        def configured() -> bool:
            pf = self._pf()
            return bool(pf and pf["sync"] == "Succeeded" and len(pf.get("Vfs") or []) == vfpod.NUM_VFS)

        wait_for(self.say, "NodeState Succeeded with the VFs", configured, self.timeout)
        want = str(vfpod.NUM_VFS)
        wait_for(self.say, f"{vfpod.RESOURCE}: {want} allocatable", lambda: (
            (self.kube.get(NODE, self.guest.name).get("status") or {}).get("allocatable") or {}).get(
            vfpod.RESOURCE) == want, self.timeout)

    def _network(self) -> None:
        self._replace(SRIOV_NETWORK, vfpod.network(), vfpod.NAMESPACE)
        wait_for(self.say, "the NetworkAttachmentDefinition in default",
                 lambda: self.kube.get(NETWORK_ATTACHMENT_DEFINITION, vfpod.NETWORK, "default"), self.timeout)

    def _pod(self) -> None:
        self._replace(POD, vfpod.pod(self.guest.name), "default")

        def running() -> bool:
            status = self.kube.get(POD, vfpod.POD, "default").get("status") or {}
            return status.get("phase") == "Running"

        wait_for(self.say, f"pod {vfpod.POD} Running", running, self.timeout)

    def _read(self) -> None:
        pod = self.kube.get(POD, vfpod.POD, "default")
        shell = GuestShell(self.guest)
        pid = _container_pid(shell, pod)
        ns = f"nsenter -t {pid} -n"
        self.outcome.link = _ok(shell, f"{ns} ip -d link show net1")
        self.outcome.ethtool = _ok(shell, f"{ns} chroot /proc/{pid}/root ethtool -i net1")
        # A sysfs mounted from the pod's netns shows its net1, in a private mount namespace.
        self.outcome.driver_sysfs = _ok(shell, f"{ns} unshare -m sh -c 'mount -t sysfs sysfs /sys && "
                                               "readlink -f /sys/class/net/net1/device/driver'").strip()
        annotation = (pod["metadata"].get("annotations") or {}).get(vfpod.STATUS_ANNOTATION) or "[]"
        self.outcome.network_status = json.dumps(json.loads(annotation), indent=2)

    # ---- objects ---------------------------------------------------------------------------------
    def _replace(self, kind: Any, obj: dict[str, Any], namespace: str) -> None:
        """Create `obj`; one left by an earlier run (--keep) is deleted first and its deletion awaited."""
        name = obj["metadata"]["name"]
        try:
            self.kube.delete(kind, name, namespace)
        except NotFound:
            pass
        else:
            def gone() -> bool:
                try:
                    self.kube.get(kind, name, namespace)
                except NotFound:
                    return True
                return False
            wait_for(self.say, f"the earlier {name} deleted", gone, self.timeout)
        self.kube.create(kind, obj, namespace)

    def _delete_objects(self) -> None:
        for kind, name, namespace in ((POD, vfpod.POD, "default"), (SRIOV_NETWORK, vfpod.NETWORK, vfpod.NAMESPACE),
                                      (SRIOV_NETWORK_NODE_POLICY, vfpod.POLICY, vfpod.NAMESPACE)):
            try:
                self.kube.delete(kind, name, namespace)
            except NotFound:
                pass


def _ok(shell: GuestShell, cmd: str) -> str:
    rc, out, err = shell.run(cmd)
    if rc != 0:
        raise DemoFailed(f"in the guest: {cmd}: exit {rc}: {err.strip()}")
    return out


def _container_pid(shell: GuestShell, pod: dict[str, Any] | Any) -> int:
    """The pod container's init pid in the guest, from containerd's task list."""
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    for line in _ok(shell, f"ctr --address {CONTAINERD_SOCK} -n k8s.io task ls").splitlines():
        fields = line.split()
        if fields and fields[0] == cid:
            return int(fields[1])
    raise DemoFailed(f"container {cid} of pod {vfpod.POD} is not in the guest's task list")


def self_command() -> str:
    """How a user runs sriovop again from this process: the console script beside the interpreter."""
    script = Path(sys.executable).parent / "sriovop"
    return str(script) if script.exists() and os.access(script, os.X_OK) else f"{sys.executable} -m sriovop.cli"
