"""Running the config daemon against the real API server and a simulated host.

In-process (`running_daemon`) for most tests; as a `sriovop config-daemon` subprocess (`DaemonProcess`)
where the process itself matters (kill at an apply step, restart, CLI flags).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG
from sriovop.api.v1.supportednics import supported_nic_ids_configmap
from sriovop.daemon.app import Daemon
from sriovop.daemon.settings import DaemonSettings
from sriovop.host.paths import HostPaths
from sriovop.host.records import PfRecords
from sriovop.host.steps import CRASH_ENV
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from sriovop.sim.access import SimKernelAccess
from test.support.host_sim import FAST
from test.support.poll import wait_for

REPO = Path(__file__).resolve().parents[2]
IDLE = {consts.NODE_STATE_DRAIN_ANNOTATION: consts.DRAIN_IDLE,
        consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE}
#: Short loop timings for tests (flags of the same names on the command line).
FAST_TIMINGS = {"requeue_after": 1.0, "retry_base_delay": 0.2, "retry_max_delay": 2.0, "startup_max_delay": 0.5}


def client_for(kubeconfig: Path) -> Client:
    return Client(load_config(str(kubeconfig)))


class CountingClient(Client):
    """Records (method, path) of every request that is not a watch."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.lock = threading.Lock()
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> Any:  # type: ignore[override]
        if not (kwargs.get("query") or {}).get("watch"):
            with self.lock:
                self.sent.append((method, path))
        return super().request(method, path, **kwargs)

    def snapshot(self) -> list[tuple[str, str]]:
        with self.lock:
            return list(self.sent)


def prepare_cluster(client: Client, namespace: str, node: str, *, node_state: bool = True,
                    spec: dict[str, Any] | None = None, opconfig: dict[str, Any] | None = None) -> None:
    """What the operator would have created: the Node (as the kubelet would), the NIC list, the
    operator config and (optionally) the NodeState with the drain controller's initial annotations."""
    try:
        client.create(NODE, {"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
    except Conflict:
        pass
    client.create(CONFIG_MAP, supported_nic_ids_configmap(namespace), namespace)
    client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": "default", "namespace": namespace},
                                          "spec": opconfig or {}}, namespace)
    if node_state:
        create_node_state(client, namespace, node, spec or {})


def create_node_state(client: Client, namespace: str, node: str, spec: dict[str, Any]) -> dict[str, Any]:
    return client.create(SRIOV_NETWORK_NODE_STATE, {
        "metadata": {"name": node, "namespace": namespace, "annotations": dict(IDLE)}, "spec": spec}, namespace)


def get_state(client: Client, namespace: str, node: str) -> dict[str, Any]:
    return client.get(SRIOV_NETWORK_NODE_STATE, node, namespace)


def set_spec(client: Client, namespace: str, node: str, interfaces: list[dict[str, Any]]) -> dict[str, Any]:
    return client.patch(SRIOV_NETWORK_NODE_STATE, node, {"spec": {"interfaces": interfaces}}, namespace=namespace)


def set_current(client: Client, namespace: str, node: str, value: str) -> None:
    """What the drain controller writes."""
    client.patch(SRIOV_NETWORK_NODE_STATE, node,
                 {"metadata": {"annotations": {consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: value}}},
                 namespace=namespace)


def annotation(obj: dict[str, Any], key: str) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(key)


def wait_sync(client: Client, namespace: str, node: str, status: str, timeout: float = 180.0,
              generation: int | None = None) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        st = get_state(client, namespace, node)
        if (st.get("status") or {}).get("syncStatus") != status:
            return None
        if generation is not None and st["metadata"]["generation"] != generation:
            return None
        return st
    return wait_for(check, timeout, f"NodeState {node} syncStatus={status}")  # type: ignore[no-any-return]


def settings(namespace: str, node: str, root: Path, **overrides: Any) -> DaemonSettings:
    values: dict[str, Any] = {"node_name": node, "namespace": namespace, "host_root": root,
                              "apply_options": FAST, **FAST_TIMINGS}
    values.update(overrides)
    return DaemonSettings(**values)


def waits_skipped(daemon: Daemon) -> int:
    """Passes the daemon ended at once because what its waiting pass decided from had not changed."""
    assert daemon.reconciler is not None
    return daemon.reconciler.waits_skipped


@contextmanager
def running_daemon(kubeconfig: Path, namespace: str, node: str, root: Path, *, client: Client | None = None,
                   **overrides: Any) -> Iterator[Daemon]:
    """The daemon in this process against the simulated host at `root` (as the hollow nodes run it)."""
    daemon = Daemon(settings(namespace, node, root, **overrides), client or client_for(kubeconfig),
                    registry=CollectorRegistry(), kernel=SimKernelAccess(root))
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            daemon.run(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"daemon-{node}", daemon=True)
    thread.start()
    try:
        wait_for(lambda: daemon.started.is_set() or errors, 60, "the daemon to start")
        assert not errors, f"daemon failed: {errors!r}"
        yield daemon
    finally:
        stop.set()
        thread.join(60)
        assert not thread.is_alive(), "the daemon did not stop within 60 s"
        assert not errors, f"daemon failed: {errors!r}"


class DaemonProcess:
    """`sriovop config-daemon --simulated-host` as a child process against the simulated host at `root`,
    logs captured in a file."""

    def __init__(self, kubeconfig: Path, namespace: str, node: str, root: Path, log_path: Path, *,
                 crash_at: str | None = None, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        args = [sys.executable, "-m", "sriovop.cli", "config-daemon", "--node-name", node,
                "--namespace", namespace, "--host-root", str(root), "--simulated-host",
                "--kubeconfig", str(kubeconfig), "--log-format", "console",
                "--requeue-after", str(FAST_TIMINGS["requeue_after"]),
                "--retry-base-delay", str(FAST_TIMINGS["retry_base_delay"]),
                "--retry-max-delay", str(FAST_TIMINGS["retry_max_delay"]),
                "--startup-max-delay", str(FAST_TIMINGS["startup_max_delay"]),
                "--sysfs-write-timeout", "10", "--vf-wait-timeout", "3", "--netdev-wait-timeout", "0.5",
                *(extra_args or [])]
        full_env = dict(os.environ)
        full_env.pop(CRASH_ENV, None)
        full_env.pop("KUBECONFIG", None)
        full_env.update(env or {})
        if crash_at:
            full_env[CRASH_ENV] = crash_at
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=full_env, cwd=REPO)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"daemon did not exit within {timeout}s; log:\n{self.log_text()[-4000:]}") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return int(self.proc.returncode)


def pf_spec(pf: dict[str, Any], num_vfs: int, *, mtu: int = 0, groups: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    spec: dict[str, Any] = {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": num_vfs}
    if mtu:
        spec["mtu"] = mtu
    spec["vfGroups"] = groups if groups is not None else [
        {"resourceName": "net", "deviceType": "netdevice", "vfRange": f"0-{num_vfs - 1}", "policyName": "p"}]
    return spec


def full_spec(sim: Any) -> list[dict[str, Any]]:
    xxv, igb = sim.describe()["pfs"]
    return [
        pf_spec(xxv, 4, mtu=9000, groups=[
            {"resourceName": "net", "deviceType": "netdevice", "vfRange": "0-1", "mtu": 9000, "policyName": "a"},
            {"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": "2-3", "policyName": "b"}]),
        pf_spec(igb, 2),
    ]


def assert_host_matches(sim: Any, spec: list[dict[str, Any]]) -> None:
    """Read the simulated kernel itself: VF count, drivers, MTUs, pinned admin MACs."""
    xxv = sim.kernel.pfs[spec[0]["pciAddress"]]
    assert xxv.numvfs == 4 and sorted(xxv.vfs) == [0, 1, 2, 3]
    assert [xxv.vfs[i].driver for i in range(4)] == ["iavf", "iavf", "vfio-pci", "vfio-pci"]
    assert [xxv.vfs[i].mtu for i in (0, 1)] == [9000, 9000]
    for i in (0, 1):  # netdevice VFs: admin MAC pinned on the PF = the VF netdev's MAC
        vf_dir = sim.kernel.dev_dir(xxv.vfs[i].pci) / "net"
        mac = next(vf_dir.iterdir()).joinpath("address").read_text().strip()
        assert xxv.vfs[i].admin_mac == mac != ""
    igb = sim.kernel.pfs[spec[1]["pciAddress"]]
    assert igb.numvfs == 2 and [igb.vfs[i].driver for i in range(2)] == ["igbvf", "igbvf"]
    records = PfRecords(HostPaths.at(sim.root))
    assert [records.load(s["pciAddress"]) for s in spec] == spec, "PF records are the applied spec"


