"""Stand-ins for the DaemonSet controller, the kubelet and the device plugin's init container.

No kube-controller-manager or kubelet runs in the tests, so `FakeDevicePluginSet` plays all three for
one node: it keeps one live `app=sriov-device-plugin` pod bound to the node, finalises a deleted pod
(grace period 0, as the kubelet would once its containers stopped) and creates a replacement with a
new UID. With `init=True` each pod gets a `sriovop wait-for-config` subprocess standing in for its init
container, killed when its pod is deleted (as the kubelet kills a deleted pod's containers).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.render.workloads import WAIT_FOR_CONFIG_COMMAND
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, Conflict, NotFound
from sriovop.runtime.kinds import POD

REPO = Path(__file__).resolve().parents[2]
LABELS = {consts.DEVICE_PLUGIN_APP_LABEL: consts.DEVICE_PLUGIN_APP_LABEL_VALUE}


def device_plugin_pod(namespace: str, node: str, *, annotations: dict[str, str] | None = None,
                      init: bool = False) -> dict[str, Any]:
    """A pod as the DaemonSet would create it; `init`: with the rendered wait-for-config init container
    (its spec only: here a subprocess runs it)."""
    meta: dict[str, Any] = {"generateName": "sriov-device-plugin-", "namespace": namespace, "labels": dict(LABELS)}
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "sriov-device-plugin", "image": "dp:test"}]}
    if init:
        spec["initContainers"] = [{"name": "device-plugin-init", "image": "sriovop:test",
                                   "command": list(WAIT_FOR_CONFIG_COMMAND)}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def wait_for_config_process(kubeconfig: Path, namespace: str, pod: str, node: str, log_path: Path,
                            *extra: str) -> subprocess.Popen[bytes]:
    """`sriovop wait-for-config` as the init container runs it: identity from the environment."""
    env = dict(os.environ)
    env.pop("KUBECONFIG", None)
    env.update({"POD_NAME": pod, "NAMESPACE": namespace, "NODE_NAME": node})
    args = [sys.executable, "-m", "sriovop.cli", "wait-for-config", "--kubeconfig", str(kubeconfig),
            "--poll-interval", "0.5", "--retry-max-delay", "2", "--timeout", "180", "--log-format", "console",
            *extra]
    with open(log_path, "ab") as log:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)


@dataclass
class InitRun:
    pod: str
    uid: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    killed: bool = False
    #: What `on_init_exit` returned when the process was seen exiting (e.g. the host's VF count).
    seen_at_exit: Any = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class FakeDevicePluginSet:
    client: Client
    namespace: str
    node: str
    kubeconfig: Path
    log_dir: Path
    init: bool = False
    #: Called when a pod's deletion is first seen / an init process is seen exiting; the value is kept.
    on_delete: Callable[[], Any] | None = None
    on_init_exit: Callable[[], Any] | None = None
    created: list[str] = field(default_factory=list)   # uids, in order
    deleted: list[tuple[str, Any]] = field(default_factory=list)   # (uid, on_delete value)
    inits: dict[str, InitRun] = field(default_factory=dict)   # by uid
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"fake-ds-{self.node}", daemon=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> FakeDevicePluginSet:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for run in self.inits.values():
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()

    def live_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.client.list(POD, self.namespace, label_selector=LABELS,
                                            field_selector={"spec.nodeName": self.node})
                if not p["metadata"].get("deletionTimestamp")]

    def current(self) -> InitRun | None:
        return self.inits.get(self.created[-1]) if self.created else None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._tick()
            except ApiError as exc:
                self.errors.append(str(exc))
            self._stop.wait(0.1)

    def _tick(self) -> None:
        pods = self.client.list(POD, self.namespace, label_selector=LABELS, field_selector={"spec.nodeName": self.node})
        for run in self.inits.values():
            if run.proc.poll() is not None and run.seen_at_exit is None and not run.killed:
                run.seen_at_exit = self.on_init_exit() if self.on_init_exit else True
        live = []
        for pod in pods:
            meta = pod["metadata"]
            if not meta.get("deletionTimestamp"):
                live.append(pod)
                continue
            self._finalize(meta)
        known = {p["metadata"]["uid"] for p in pods}
        for uid in self.created:  # deleted outright (no grace period) since the last look
            if uid not in known and uid not in {u for u, _ in self.deleted}:
                self._record_deleted(uid)
        if not live:
            pod = self.client.create(POD, device_plugin_pod(self.namespace, self.node, init=self.init), self.namespace)
            uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
            self.created.append(uid)
            if self.init:
                log_path = self.log_dir / f"{name}.log"
                proc = wait_for_config_process(self.kubeconfig, self.namespace, name, self.node, log_path)
                self.inits[uid] = InitRun(name, uid, proc, log_path)

    def _record_deleted(self, uid: str) -> None:
        self.deleted.append((uid, self.on_delete() if self.on_delete else None))
        run = self.inits.get(uid)
        if run is not None and run.proc.poll() is None:
            run.killed = True  # the kubelet stops a deleted pod's containers
            run.proc.kill()
            run.proc.wait()

    def _finalize(self, meta: dict[str, Any]) -> None:
        if meta["uid"] not in {u for u, _ in self.deleted}:
            self._record_deleted(meta["uid"])
        try:
            self.client.delete(POD, meta["name"], self.namespace, grace_period_seconds=0,
                               preconditions={"uid": meta["uid"]})
        except (NotFound, Conflict):
            pass
