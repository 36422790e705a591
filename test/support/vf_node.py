"""A dev-cluster node whose pods get VFs of the simulated SR-IOV host, through the whole real chain:
kube-scheduler, the node's kubelet, our device plugin as a DaemonSet pod (the device-plugin image), the
node's attach plugin (already installed by `dev cluster up`) and the `sriov` CNI (`sriovop cni-server
--simulated-host` behind the static shim, installed into the node's CNI bin dir as `sriov`).

Host: the simulated SR-IOV host (PF side simulated; VF netdevs, pod namespaces and every move real)
under a real kubelet, containerd and runc on this machine (the session's 2-node cluster).
Everything is removed on the way out (DaemonSet, server, shim, simulator).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION
from sriovop.devcluster.cnishim import shim_binary
from sriovop.devcluster.images.build import build_images, default_out_dir
from sriovop.devcluster.images.spec import IMAGES
from sriovop.kubelet.podresources import PodResources, list_pod_resources
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import DAEMON_SET, EVENT, NODE, POD
from sriovop.sim.host import SimHost
from sriovop.sim.vf_netdevs import wire_vf_netdevs
from test.support.cluster import SRIOVOP, ClusterNodes, pod_on, running_pod
from test.support.cni_sim import create_vfs
from test.support.poll import wait_for

NETWORKS = "k8s.v1.cni.cncf.io/networks"
NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
PREFIX = "openshift.io"
DP_TIMEOUT_S = 240.0


@dataclass
class VfNode:
    kube: Client
    cluster: ClusterNodes
    node: str
    namespace: str
    sim: SimHost
    vfs: dict[str, str]  # VF PCI address -> its netdev name in the host namespace
    resource_name: str  # without the prefix
    work: Path  # cni state, ipam and devinfo directories live here
    server: subprocess.Popen[bytes] | None = None

    @property
    def resource(self) -> str:
        return f"{PREFIX}/{self.resource_name}"

    @property
    def node_dir(self) -> Path:
        return self.cluster.dir / "nodes" / self.node

    @property
    def kubelet_root(self) -> Path:
        return self.node_dir / "kubelet"

    @property
    def pod_resources(self) -> Path:
        return self.kubelet_root / "pod-resources" / "kubelet.sock"

    @property
    def state_dir(self) -> Path:
        return self.work / "cni-state"

    @property
    def ipam_dir(self) -> Path:
        return self.work / "ipam"

    @property
    def server_log(self) -> Path:
        return self.work / "sriov-cni-server.log"

    # --- what the node reports -------------------------------------------------------------------------

    def allocatable(self) -> str | None:
        return (self.kube.get(NODE, self.node)["status"].get("allocatable") or {}).get(self.resource)

    def host_links(self) -> dict[str, dict[str, Any]]:
        """Links of the simulated host's namespace by name: mac, alias (the PCI address of a VF)."""
        with IPRoute(netns=self.sim.netns) as ipr:
            return {str(m.get_attr("IFLA_IFNAME")): {"mac": m.get_attr("IFLA_ADDRESS"),
                                                      "alias": m.get_attr("IFLA_IFALIAS")}
                    for m in ipr.get_links()}

    def pod_resource_list(self) -> list[PodResources]:
        return list_pod_resources(self.pod_resources)

    def leftovers(self) -> list[str]:
        """Files the CNI (cache, allocations) and host-local (leases) keep, minus the lock files."""
        found = [str(p.relative_to(self.work)) for d in (self.state_dir, self.ipam_dir) if d.is_dir()
                 for p in d.rglob("*") if p.is_file() and "vf_lock" not in p.parts and p.name != "lock"
                 and not p.name.startswith("last_reserved_ip")]
        return sorted(found)

    # --- objects ---------------------------------------------------------------------------------------

    def create_nad(self, name: str, config: dict[str, Any] | str, with_resource: bool = True) -> None:
        text = config if isinstance(config, str) else json.dumps(config)
        annotations = {"k8s.v1.cni.cncf.io/resourceName": self.resource} if with_resource else {}
        self.kube.create(NETWORK_ATTACHMENT_DEFINITION, {
            "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": self.namespace, "annotations": annotations},
            "spec": {"config": text}}, self.namespace)

    def sriov_config(self, name: str, subnet: str, **fields: Any) -> dict[str, Any]:
        return {"cniVersion": "1.0.0", "name": name, "type": "sriov", **fields,
                "ipam": {"type": "host-local", "subnet": subnet, "dataDir": str(self.ipam_dir)}}

    def vf_pod(self, name: str, network: str, vfs: int = 1) -> dict[str, Any]:
        pod = pod_on(self.node, name)
        pod["metadata"]["annotations"] = {NETWORKS: network}
        if vfs:
            pod["spec"]["containers"][0]["resources"] = {"limits": {self.resource: str(vfs)},
                                                         "requests": {self.resource: str(vfs)}}
        return pod

    def running(self, name: str) -> dict[str, Any]:
        """The pod once Running with its IP; before that an exception naming its phase and its events,
        which `wait_for` shows when it gives up."""
        pod = running_pod(self.kube, self.namespace, name)
        if pod:
            return pod
        phase = (self.kube.get(POD, name, self.namespace).get("status") or {}).get("phase")
        events = [f"{e.get('reason')}: {e.get('message')}" for e in self.kube.list(EVENT, self.namespace)
                  if e["involvedObject"].get("name") == name]
        raise LookupError(f"{name} {phase}; events: {events[-3:]}")

    def gone(self, names: set[str]) -> bool:
        return not [p for p in self.kube.list(POD, self.namespace) if p["metadata"]["name"] in names]

    # --- the device plugin's DaemonSet -----------------------------------------------------------------

    def device_plugin_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.kube.list(POD, self.namespace)
                if (p["metadata"].get("labels") or {}).get("app") == "vf-node-dp"]


def _daemonset(vf: VfNode, image: str, config: Path, plugin_dir: Path, devinfo: Path) -> dict[str, Any]:
    """Our device plugin as the operator runs it: privileged, host network, the host paths it needs (here
    the simulated host's root, the node's plugin-watcher directory) mounted at the same paths."""
    registry = vf.kubelet_root / "plugins_registry"
    paths = {"sim": vf.sim.root, "registry": registry, "plugins": plugin_dir, "devinfo": devinfo,
             "config": config.parent, "netns": Path("/run/netns")}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "vf-node-dp"},
        "spec": {"selector": {"matchLabels": {"app": "vf-node-dp"}}, "template": {
            "metadata": {"labels": {"app": "vf-node-dp"}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": vf.node}, "hostNetwork": True,
                     "terminationGracePeriodSeconds": 5,
                     "containers": [{
                         "name": "device-plugin", "image": image, "imagePullPolicy": "IfNotPresent",
                         "command": ["sriovop", "device-plugin"],
                         "args": [f"--config-file={config}", f"--resource-prefix={PREFIX}",
                                  f"--host-root={vf.sim.root}", "--simulated-host",
                                  f"--plugin-registry-dir={registry}",
                                  f"--device-plugin-dir={plugin_dir}", f"--devinfo-dir={devinfo}",
                                  "--watch-interval=1", "--health-interval=2", "--log-format=console"],
                         "securityContext": {"privileged": True, "runAsUser": 0},
                         "volumeMounts": [{"name": k, "mountPath": str(p),
                                           **({"mountPropagation": "HostToContainer"} if k == "netns" else {})}
                                          for k, p in paths.items()]}],
                     "volumes": [{"name": k, "hostPath": {"path": str(p)}} for k, p in paths.items()]}}}}


def _device_plugin_archive() -> Path:
    """The device-plugin image archive, built (or found current) by one test process at a time: tests
    in parallel processes would otherwise write the same archive file at once."""
    out = default_out_dir()
    out.mkdir(parents=True, exist_ok=True)
    with (out / ".vf-node.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return build_images(out, targets=["device-plugin"], say=lambda _: None)["device-plugin"]


def _start_server(vf: VfNode) -> subprocess.Popen[bytes]:
    socket_dir = vf.node_dir / "cni" / "sock"
    with vf.server_log.open("wb") as out:
        proc = subprocess.Popen([*SRIOVOP, "cni-server", "--plugins", "sriov", f"--socket-dir={socket_dir}",
                                 f"--host-root={vf.sim.root}", "--simulated-host", f"--state-dir={vf.state_dir}",
                                 f"--pod-resources-socket={vf.pod_resources}", "--log-format=console"],
                                stdout=subprocess.DEVNULL, stderr=out)
    wait_for(lambda: (socket_dir / "sriov.sock").is_socket() or proc.poll() is not None, timeout=120,
             what="the sriov CNI server's socket")
    assert proc.poll() is None, vf.server_log.read_text()[-3000:]
    return proc


@contextmanager
def vf_node(cluster: ClusterNodes, kube: Client, namespace: str, work: Path, node: str = "sriovop-node-1",
            vfs: int = 4) -> Iterator[VfNode]:
    """`vfs` VFs on a simulated E810 PF, advertised on `node` as openshift.io/<random> by the device
    plugin's DaemonSet, and the `sriov` plugin served for the node's attach plugin."""
    work.mkdir(parents=True, exist_ok=True)
    sim = SimHost(work / "host", ["e810:1"]).start()
    shim = cluster.dir / "nodes" / node / "cni" / "bin" / "sriov"
    vf: VfNode | None = None
    try:
        create_vfs(sim, 0, vfs)
        wired = wire_vf_netdevs(sim.root)
        vf = VfNode(kube, cluster, node, namespace, sim, wired, f"vf_{uuid.uuid4().hex[:6]}", work)
        archive = _device_plugin_archive()
        subprocess.run(["ctr", "--address", str(cluster.containerd_socket(node)), "-n", "k8s.io", "images",
                        "import", str(archive)], check=True, capture_output=True, timeout=600)
        image = next(spec.name for spec in IMAGES if spec.target == "device-plugin")
        [pf_name] = [p.name for p in (sim.root / "sys/bus/pci/devices" / sim.pf(0).pci / "net").iterdir()]
        with IPRoute(netns=sim.netns) as ipr:  # the device plugin counts a VF healthy while its PF is up
            ipr.link("set", index=ipr.link_lookup(ifname=pf_name)[0], state="up")
        config = work / "dp-config" / "config.json"
        config.parent.mkdir()
        config.write_text(json.dumps({"resourceList": [{"resourceName": vf.resource_name,
                                                        "selectors": {"pfNames": [pf_name]}}]}))
        for sub in ("dp-sockets", "devinfo"):
            (work / sub).mkdir()
        shutil.copyfile(shim_binary(), shim)
        shim.chmod(0o755)
        vf.server = _start_server(vf)
        kube.create(DAEMON_SET, _daemonset(vf, image, config, work / "dp-sockets", work / "devinfo"), namespace)
        wait_for(lambda: vf is not None and vf.allocatable() == str(vfs), timeout=DP_TIMEOUT_S,
                 what=f"{vf.resource}: {vfs} allocatable on {node}")
        yield vf
    finally:
        if vf is not None:
            try:
                kube.delete(DAEMON_SET, "vf-node-dp", namespace)
            except NotFound:
                pass
            wait_for(lambda: vf is not None and not vf.device_plugin_pods(), timeout=DP_TIMEOUT_S,
                     what="the device-plugin pod gone")
            if vf.server is not None:
                vf.server.send_signal(signal.SIGTERM)
                vf.server.wait(60)
        shim.unlink(missing_ok=True)
        sim.stop()
