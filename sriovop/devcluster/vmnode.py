"""The QEMU guest as a kubelet node of a dev cluster: hack/vm/node.sh runs in it. `sriovop dev cluster up
--vm-nodes 1` (its supervisor) and `make e2e-node` boot and join the guest with these functions.

The host renders the node's configuration with the modules the host's own nodes use
(sriovop/devcluster/containerd.py, kubelet.py, attach.py) for paths inside the guest, mints the node's client
certificate from the cluster's CA, and hands everything over in the job share. The guest reaches
kube-apiserver only through the explicit forward (hack/vm/forward.py); `join` waits until the node is
Ready and schedulable, then labels it a worker (the kubelet may not set node-role labels on itself).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import yaml

from sriovop.cni.attach import netconf
from sriovop.devcluster import attach
from sriovop.devcluster.addressing import NodeNetwork
from sriovop.devcluster.binaries import find_node_binaries
from sriovop.devcluster.certs import CertificateAuthority, KeyPair
from sriovop.devcluster.cnishim import shim_binary
from sriovop.devcluster.containerd import CNI_BIN_DIR, Containerd
from sriovop.devcluster.images.pause import ensure_pause_archive
from sriovop.devcluster.kubelet import Kubelet
from sriovop.devcluster.nodecluster import WORKER_ROLE, schedulable
from sriovop.devcluster.vmguest import GUEST_APISERVER, HACK_VM, GuestError, GuestVM, RunningGuest, guest_kubeconfig
from sriovop.devcluster.vmshell import serve_requests_script
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ConnectionFailed
from sriovop.runtime.kinds import NODE

NODE_NAME = "sriovop-vm-1"
NODE_DIR = Path("/var/lib/sriovop-node")
GUEST_IP = "10.0.2.15"
# The guest's own pod subnet: only the guest routes it, so it just must not meet 10.0.2.0/24 or a Service range.
POD_SUBNET = ipaddress.IPv4Network("10.250.0.0/24")
# containerd + kubelet + the config-daemon pod's python, and the imported images on a tmpfs.
MEM_MB = 4096
JOIN_TIMEOUT_S = 1800.0  # two Python images (config daemon, device plugin) unpacked under TCG
LOGS_KEPT = ("containerd.log", "kubelet.log", "sriovop-attach.log")
JOB = Path("/run/job")
GUEST_CNI_BIN_DIR = Path("/opt/cni/bin")
KUBELET_PID_FILE = "/run/kubelet.pid"  # node.sh's kubelet supervisor restarts a kubelet killed by this pid


@dataclass(frozen=True)
class ClusterAccess:
    """What the guest needs from a running dev cluster directory."""

    dir: Path
    service_ip: str

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def apiserver_port(self) -> int:
        server = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        port = urlparse(server).port
        if not port:
            raise ValueError(f"{self.kubeconfig}: server {server!r} names no port")
        return port


def node_kubeconfig(cluster: ClusterAccess, name: str, user: str = "", groups: tuple[str, ...] = ("system:nodes",)
                    ) -> str:
    """The admin kubeconfig's cluster entry with a client certificate for the guest: the node's
    `system:node:<name>` unless another user is given (the attach plugin's)."""
    pki = cluster.dir / "pki"
    ca = CertificateAuthority.load(KeyPair((pki / "ca.crt").read_bytes(), (pki / "ca.key").read_bytes()))
    user = user or f"system:node:{name}"
    pair = ca.issue_client(user, list(groups))
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
        "client-key-data": base64.b64encode(pair.key_pem).decode(),
    }
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
    staged = cluster.dir / "users" / f"{safe}-guest.kubeconfig"
    staged.parent.mkdir(exist_ok=True)
    staged.write_text(yaml.safe_dump(config))
    staged.chmod(0o600)
    return guest_kubeconfig(staged)


def attach_node(name: str) -> attach.AttachNode:
    """The attach plugin of the guest node, with the guest's paths (hack/vm/node.sh installs it)."""
    return attach.AttachNode(NODE_DIR, name, Path(CNI_BIN_DIR), JOB / "sriovop-attach", JOB / "attach.kubeconfig",
                             NODE_DIR / "kubelet")


def node_files(cluster: ClusterAccess, name: str) -> dict[str, str | bytes]:
    net = NodeNetwork(name, POD_SUBNET, "cni-vm0")
    plugin = attach_node(name)
    # A real node's plugin dir, where the config daemon's init containers install the sriov shim and the
    # sriov-cni-server container finds IPAM plugins; node.sh binds it onto the attach plugin's bin dir.
    containerd = Containerd(NODE_DIR, net, GUEST_CNI_BIN_DIR, plugin.containerd_env())
    kubelet = Kubelet(find_node_binaries().kubelet, NODE_DIR, name, GUEST_IP, containerd.endpoint, "/",
                      JOB / "kubeconfig", JOB / "ca.crt")
    kubelet.port, kubelet.healthz_port = 10250, 10248
    bridge = containerd.cni_conflist()
    return {
        "containerd.toml": containerd.config(),
        "cni.conflist": json.dumps(bridge, indent=2),
        "attach.conflist": json.dumps(plugin.wrapper(netconf.parse(bridge), containerd.cni_conf_dir), indent=2),
        "attach.kubeconfig": node_kubeconfig(cluster, name, attach.user_name(name), (attach.GROUP,)),
        "sriovop-attach": shim_binary().read_bytes(),
        "kubelet.yaml": yaml.safe_dump(kubelet.config()),
        "kubeconfig": node_kubeconfig(cluster, name),
        "ca.crt": (cluster.dir / "pki" / "ca.crt").read_bytes(),
    }


def node_vm(cluster: ClusterAccess, images: list[Path], name: str = NODE_NAME, igb: int = 1,
            iommu: bool = False) -> GuestVM:
    """The guest with its job; containerd inherits SRIOVOP_CNI_SOCKET_DIR (the attach server's sockets).
    `iommu` adds QEMU's intel-iommu and boots with `intel_iommu=on iommu=pt` (run.sh's default command line
    then), the arguments the config daemon wants for vfio-pci: the node needs no reboot for a vfio policy."""
    for archive in images:
        if "," in str(archive) or " " in str(archive):
            raise ValueError(f"image archive {archive}: the guest's import list is split on spaces")
    env = {
        "NODE_NAME": name, "NODE_DIR": str(NODE_DIR), "SERVICE_IP": cluster.service_ip,
        "POD_SUBNET": str(POD_SUBNET), "APISERVER_FWD": GUEST_APISERVER,
        "IMAGES": " ".join(str(a.resolve()) for a in [ensure_pause_archive(), *images]),
        "KUBELET": str(find_node_binaries().kubelet),
        "ATTACH_SERVER": shlex.join(attach_node(name).server_argv(sys.executable)),
        **attach_node(name).containerd_env(),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    }
    return GuestVM(igb=igb, apiserver_port=cluster.apiserver_port, env=env, files=node_files(cluster, name),
                   mem_mb=MEM_MB, hostname=name, iommu=iommu)


def start_node(vm: GuestVM, timeout: float = 5400, console_log: Path | None = None) -> RunningGuest:
    """Boot the node; its command serves GuestShell requests while the kubelet runs. QEMU is killed after
    `timeout` seconds."""
    return vm.start_kubelet_host(f". {HACK_VM / 'node.sh'}\n{serve_requests_script()}", timeout=timeout,
                                 console_log=console_log)


def keep_logs(guest: RunningGuest, dest: Path) -> None:
    """Copy the guest's containerd and kubelet logs (on the job share) before the job is removed."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in LOGS_KEPT:
        if (guest.job / name).exists():
            shutil.copy(guest.job / name, dest / name)
    (dest / "console.log").write_text(guest.console)


def join(kube: Client, guest: RunningGuest, name: str = NODE_NAME, timeout: float = JOIN_TIMEOUT_S) -> float:
    """Wait until the guest's node is Ready and schedulable, label it a worker; returns the seconds taken
    from the guest's start."""
    deadline = time.monotonic() + timeout
    labelled = False
    while True:
        try:
            node = next((n for n in kube.list(NODE) if n["metadata"]["name"] == name), None)
            if node is not None and not labelled:
                kube.patch(NODE, name, {"metadata": {"labels": {WORKER_ROLE: ""}}})
                labelled = True
        except ConnectionFailed:  # the API server starved by a loaded machine: ask again until the deadline
            node = None
        if node is not None and schedulable(node):
            return time.monotonic() - guest.started
        if not guest.running or time.monotonic() > deadline:
            kubelet_log = guest.job / "kubelet.log"
            tail = kubelet_log.read_text()[-3000:] if kubelet_log.exists() else "(no kubelet.log)"
            raise GuestError(f"node {name} not Ready within {timeout:.0f}s (guest running: {guest.running})"
                                 f"\n--- console ---\n{guest.console[-3000:]}\n--- kubelet.log ---\n{tail}")
        time.sleep(1)
