"""A control plane plus N kubelet nodes on this machine: what `sriovop dev cluster up --nodes N` runs.

Start order: host settings, an address slot, etcd + kube-apiserver, kube-controller-manager,
kube-scheduler, the Service proxy, then per node its cgroup root, the attach plugin (its CNI bin dir,
the conflist wrapping the node's bridge network and its cni-server; see attach.py), containerd (with
the pause image imported, since no registry can serve it) and kubelet; it returns once every node is
Ready and labelled. Stop runs the reverse and then teardown.cleanup, which removes what the processes leave
on the host (shims, mounts, bridges, chains, cgroups).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from sriovop.devcluster import addressing, attach, cgroups, cnishim, controllermanager, process, scheduler, teardown
from sriovop.devcluster.addressing import ClusterNetwork, NodeNetwork
from sriovop.devcluster.binaries import NodeBinaries, find_node_binaries
from sriovop.devcluster.containerd import CNI_BIN_DIR, Containerd
from sriovop.devcluster.controlplane import ControlPlane, ControlPlaneError
from sriovop.devcluster.deadlines import scaled
from sriovop.devcluster.kubelet import Kubelet
from sriovop.devcluster.serviceproxy import ServiceProxy
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import NODE

log = structlog.get_logger("devcluster")

NODES_READY_TIMEOUT_S = 300.0
CONTROL_PLANE_ROLE = "node-role.kubernetes.io/control-plane"
WORKER_ROLE = "node-role.kubernetes.io/worker"
_SYSCTLS = {
    # pods on different node bridges reach each other (and Services) through the host's routing
    "net/ipv4/ip_forward": "1",
    # a pod's reply to a pod on its own bridge that it reached through a ClusterIP is bridged, not
    # routed: without this it skips conntrack and the un-DNAT (kube-proxy asks for the same setting)
    "net/bridge/bridge-nf-call-iptables": "1",
}


def role_label(index: int) -> str:
    return CONTROL_PLANE_ROLE if index == 1 else WORKER_ROLE


def schedulable(node: dict[str, object]) -> bool:
    """Ready, and kube-controller-manager has lifted the not-ready taint (pods schedule right away)."""
    status, spec = node.get("status") or {}, node.get("spec") or {}
    assert isinstance(status, dict) and isinstance(spec, dict)
    conditions = status.get("conditions") or []
    taints = {t.get("key") for t in spec.get("taints") or []}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not taints & {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def _prepare_host() -> None:
    if not Path("/proc/sys/net/bridge").exists():  # br_netfilter is a module on most distribution kernels
        subprocess.run(["modprobe", "br_netfilter"], capture_output=True, check=False)
    for key, value in _SYSCTLS.items():
        path = Path("/proc/sys") / key
        if path.exists() and path.read_text().strip() != value:
            path.write_text(value)


class Node:
    def __init__(self, cluster: NodeCluster, index: int, net: NodeNetwork) -> None:
        self.index = index
        self.net = net
        self.dir = cluster.dir / "nodes" / net.name
        self.dir.mkdir(parents=True, exist_ok=True)
        cp = cluster.control_plane
        kubelet_root = self.dir / "kubelet"
        self.attach = attach.AttachNode(self.dir, net.name, Path(CNI_BIN_DIR), cluster.cni_shim,
                                        cp.mint_user(attach.user_name(net.name), [attach.GROUP]), kubelet_root)
        self.containerd = Containerd(self.dir, net, self.attach.bin_dir, self.attach.containerd_env())
        self.cgroup = teardown.cgroup_name(cluster.network, net.name)
        self.kubelet = Kubelet(
            cluster.node_binaries.kubelet, self.dir, net.name, cluster.network.host_ip, self.containerd.endpoint,
            "/" + self.cgroup, cp.mint_user(f"system:node:{net.name}", ["system:nodes"]), cp.ca_file,
        )
        assert self.kubelet.root_dir == kubelet_root

    def start(self, images: list[Path]) -> None:
        cgroups.create(self.cgroup)
        self.attach.install_binaries()
        self.attach.install_conf(self.containerd.write_cni_conf().parent)
        self.attach.start()
        self.containerd.start()
        for archive in images:
            self.containerd.import_image(archive)
        self.kubelet.start()

    def dead(self) -> str | None:
        for what, proc in (("containerd", self.containerd.proc), ("kubelet", self.kubelet.proc),
                           (attach.PLUGIN, self.attach.proc)):
            if proc is not None and proc.poll() is not None:
                return f"{what} of {self.net.name} exited with code {proc.returncode}"
        return None

    def stop(self, crictl: Path) -> None:
        self.kubelet.stop()
        teardown.remove_pods(crictl, self.containerd.socket)  # the attach server still answers their DELs
        self.containerd.stop()
        self.attach.stop()


class NodeCluster:
    def __init__(self, directory: Path, node_count: int, node_binaries: NodeBinaries | None = None,
                 images: Callable[[], list[Path]] | None = None,
                 extra_apiserver_args: list[str] | None = None) -> None:
        self.dir = directory
        self._extra_apiserver_args = list(extra_apiserver_args or [])
        self.node_count = node_count
        self.node_binaries = node_binaries or find_node_binaries()
        self._images = images
        self.network: ClusterNetwork
        self.control_plane: ControlPlane
        self.nodes: list[Node] = []
        self.controllers: dict[str, subprocess.Popen[bytes]] = {}
        self.proxy: ServiceProxy | None = None
        self.cni_shim: Path

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def start(self) -> NodeCluster:
        started = time.monotonic()
        _prepare_host()
        teardown.cleanup(self.dir)  # a previous run of this directory that was never taken down
        shutil.rmtree(self.dir / "nodes", ignore_errors=True)
        self.network = addressing.claim(self.dir, self.node_count, os.getpid(), process.pid_alive)
        (self.dir / teardown.STATE_FILE).write_text(json.dumps(self.network.to_json(), indent=2))
        try:
            self._start(started)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, started: float) -> None:
        log.info("starting the control plane", slot=self.network.slot, pod_range=str(self.network.pod_range))
        self.control_plane = ControlPlane(self.dir, network=self.network,
                                          extra_apiserver_args=self._extra_apiserver_args).start()
        cp = self.control_plane
        pki = self.dir / "pki"
        self.controllers["kube-controller-manager"] = controllermanager.spawn(
            self.node_binaries.kube_controller_manager, cp.mint_user("system:kube-controller-manager"), pki,
            self.dir / "kube-controller-manager.log",
        )
        self.controllers["kube-scheduler"] = scheduler.spawn(
            self.node_binaries.kube_scheduler, cp.mint_user("system:kube-scheduler"),
            self.dir / "kube-scheduler.log",
        )
        client = Client(load_config(self.kubeconfig))
        self.cni_shim = cnishim.shim_binary()
        attach.install_rbac(client)
        self.proxy = ServiceProxy(client, self.network.tag, str(self.network.service_range))
        self.proxy.start()
        images = self._images() if self._images is not None else []
        for index, net in enumerate(self.network.nodes, start=1):
            node = Node(self, index, net)
            self.nodes.append(node)
            node.start(images)
            log.info("node started", node=net.name, subnet=str(net.subnet), cgroup=node.cgroup)
        log.info("waiting for the nodes to be Ready", nodes=self.node_count)
        self._wait_ready(client)
        log.info("cluster ready", nodes=self.node_count, seconds=round(time.monotonic() - started, 1))

    def _wait_ready(self, client: Client) -> None:
        limit = scaled(NODES_READY_TIMEOUT_S)
        deadline = time.monotonic() + limit
        labelled: set[str] = set()
        while True:
            if (failure := self.dead()) is not None:
                raise ControlPlaneError(failure)
            ready = set()
            for obj in client.list(NODE):
                name = obj["metadata"]["name"]
                node = next((n for n in self.nodes if n.net.name == name), None)
                if node is None:
                    continue
                if name not in labelled:
                    client.patch(NODE, name, {"metadata": {"labels": {role_label(node.index): ""}}})
                    labelled.add(name)
                if schedulable(obj):
                    ready.add(name)
            if len(ready) == len(self.nodes) and labelled >= ready:
                return
            if time.monotonic() > deadline:
                missing = sorted({n.net.name for n in self.nodes} - ready)
                tails = "\n".join(f"--- {n.kubelet.log}\n{process.log_tail(n.kubelet.log, 15)}"
                                  for n in self.nodes if n.net.name in missing)
                raise ControlPlaneError(f"nodes not Ready within {limit:.0f}s: {missing}\n{tails}")
            time.sleep(0.5)

    def restart_kubelet(self, name: str) -> None:
        node = next((n for n in self.nodes if n.net.name == name), None)
        if node is None:
            raise KeyError(f"no node {name!r} (nodes: {', '.join(n.net.name for n in self.nodes)})")
        log.info("restarting the kubelet", node=name)
        node.kubelet.restart()

    def dead(self) -> str | None:
        """Why the cluster is broken (a process exited), or None."""
        procs = {**self.controllers, "etcd": self.control_plane.etcd, "kube-apiserver": self.control_plane.apiserver}
        for name, proc in procs.items():
            if proc is not None and proc.poll() is not None:
                return f"{name} exited with code {proc.returncode}"
        for node in self.nodes:
            if (failure := node.dead()) is not None:
                return failure
        return None

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop(self.node_binaries.crictl)
        self.nodes = []
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        for proc in self.controllers.values():
            process.terminate(proc)
        self.controllers = {}
        if hasattr(self, "control_plane"):
            self.control_plane.stop()
        teardown.cleanup(self.dir)
