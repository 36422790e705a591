"""Pods with a real igbvf VF on the QEMU guest node, for `make e2e-node`: what the test creates and how it
reads the result back from both sides (the API and the guest's kernel).

The pods name the SriovNetwork's NetworkAttachmentDefinition only in `k8s.v1.cni.cncf.io/networks`; the
operator's network-resources-injector adds the VF resource request, the device plugin allocates a VF,
the attach plugin resolves it through the kubelet's pod-resources API and runs our sriov CNI. The guest
side is read with the guest's own tools (sysfs, `ip`, busybox `ping`) inside the pod's network namespace
(`nsenter -t <pid> -n`), and with the pod image's `ethtool` (chrooted into the container's root).
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
from dataclasses import dataclass
from typing import Any

from sriovop.devcluster.images.spec import by_target
from test.support.vm_daemon import GuestShell
from test.support.vm_node import GUEST_IP, KUBELET_PID_FILE, NODE_DIR

NETWORK = "vm-vf-net"
VLAN = 100
SUBNET = "10.56.217.0/24"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"
POD_NAMES = ("vm-vf-a", "vm-vf-b")
CONTAINERD_SOCK = NODE_DIR / "containerd.sock"
DEVICE_PLUGIN_SOCKET = "/var/lib/kubelet/device-plugins/openshift.io_igbvfs.sock"


def sriov_network(namespace: str, resource_name: str) -> dict[str, Any]:
    """A SriovNetwork with a VLAN and host-local IPAM whose NAD the operator writes into `default`."""
    ipam = {"type": "host-local", "subnet": SUBNET, "rangeStart": "10.56.217.10", "rangeEnd": "10.56.217.50"}
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork",
            "metadata": {"name": NETWORK, "namespace": namespace},
            "spec": {"resourceName": resource_name, "networkNamespace": "default", "vlan": VLAN,
                     "ipam": json.dumps(ipam)}}


def vf_pod(name: str, node: str, network: str = NETWORK) -> dict[str, Any]:
    """A long-running pod (the config-daemon image: it has ethtool) naming the network only in its
    annotation: no resource request of its own."""
    image = by_target("config-daemon").name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {NETWORKS_ANNOTATION: network}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": image, "imagePullPolicy": "IfNotPresent",
                                     "command": ["sleep", "infinity"]}]}}


def requested(pod: dict[str, Any], resource: str) -> str | None:
    """The container's request for `resource` (the injector's doing: the manifest has none)."""
    container = pod["spec"]["containers"][0]
    return ((container.get("resources") or {}).get("requests") or {}).get(resource)


def network_status(pod: dict[str, Any]) -> dict[str, Any]:
    """The network-status entry of the SR-IOV network (the attach plugin writes it)."""
    entries = json.loads((pod["metadata"].get("annotations") or {}).get(STATUS_ANNOTATION) or "[]")
    [entry] = [e for e in entries if e.get("name") == f"default/{NETWORK}"]
    return dict(entry)


def container_pid(shell: GuestShell, pod: dict[str, Any]) -> int:
    """The pod container's init pid in the guest (containerd's task list)."""
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    out = shell.check(f"ctr --address {CONTAINERD_SOCK} -n k8s.io task ls")
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == cid:
            return int(fields[1])
    raise AssertionError(f"container {cid} not in the guest's task list:\n{out}")


@dataclass(frozen=True)
class PodVf:
    """What the guest's kernel says about a pod's net1."""

    pci_sysfs: str
    driver_sysfs: str
    ethtool: dict[str, str]
    env_pci: str
    mac: str
    ips: list[str]
    link_detail: str

    def as_record(self) -> dict[str, Any]:
        return dict(self.__dict__)


def pod_vf(shell: GuestShell, pid: int, resource_env: str) -> PodVf:
    ns = f"nsenter -t {pid} -n"
    # A sysfs mounted from the pod's netns shows its net1 (as `ip netns exec` does), in a private mount ns.
    sysfs = shell.check(f"{ns} unshare -m sh -c 'mount -t sysfs sysfs /sys && "
                       "readlink -f /sys/class/net/net1/device && readlink -f /sys/class/net/net1/device/driver'")
    pci, driver = (line.rsplit("/", 1)[-1] for line in sysfs.split())
    # The pod image's ethtool (the guest has none), its ioctl in the pod's netns.
    ethtool = dict(line.split(": ", 1) for line in shell.check(f"{ns} chroot /proc/{pid}/root ethtool -i net1")
                   .splitlines() if ": " in line)
    environ = shell.check(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    env = dict(line.split("=", 1) for line in environ.splitlines() if "=" in line)
    [addr] = json.loads(shell.check(f"{ns} ip -j addr show net1"))
    return PodVf(pci_sysfs=pci, driver_sysfs=driver, ethtool=ethtool, env_pci=env.get(resource_env, ""),
                 mac=addr["address"], ips=[a["local"] for a in addr.get("addr_info", []) if a["family"] == "inet"],
                 link_detail=shell.check(f"{ns} ip -d link show net1"))


def pf_vf_entry(shell: GuestShell, pf: str, pf_pci: str, vf_pci: str) -> dict[str, Any]:
    """The PF's netlink entry of the VF at `vf_pci` (`ip -j -d link show <pf>`), with its index."""
    out = shell.check(f"for l in /sys/bus/pci/devices/{pf_pci}/virtfn*; do echo \"${{l##*virtfn}} "
                     f"$(basename \"$(readlink -f \"$l\")\")\"; done")
    index = {p: int(i) for i, p in (line.split() for line in out.splitlines())}[vf_pci]
    [link] = json.loads(shell.check(f"ip -j -d link show {pf}"))
    [entry] = [v for v in link.get("vfinfo_list", []) if v.get("vf") == index]
    return dict(entry)


def vlan_of(entry: dict[str, Any]) -> int:
    """The VF's VLAN from iproute2's JSON: `vlan_list` on newer versions, `vlan` on older ones."""
    if entry.get("vlan_list"):
        return int(entry["vlan_list"][0].get("vlan", 0))
    return int(entry.get("vlan", 0))


def net1_flags(shell: GuestShell, pid: int) -> list[str]:
    """The link flags of the pod's net1 (`UP`, `LOWER_UP`, ...), read in the pod's network namespace."""
    return list(json.loads(shell.check(f"nsenter -t {pid} -n ip -j link show net1"))[0]["flags"])


def has_link(shell: GuestShell, pid: int) -> bool:
    """Whether the pod's net1 has a carrier: an igbvf VF whose reset handshake with the emulated PF failed
    has none (hack/vm/README.md; test/support/vm_pod_vf_reset.py resets it again)."""
    return "LOWER_UP" in net1_flags(shell, pid)


def ping(shell: GuestShell, pid: int, address: str) -> tuple[bool, str]:
    """Three pings from the pod's netns (the guest's busybox); the output is the evidence either way."""
    rc, out, err = shell.run(f"nsenter -t {pid} -n busybox ping -c 3 -W 3 {shlex.quote(address)}", timeout=180)
    return rc == 0, (out + err)[-2000:]


def traffic_evidence(shell: GuestShell, pid: int, pf: str) -> str:
    """Neighbour table and counters of the pod's net1 and of the PF, when pings fail."""
    cmds = (f"nsenter -t {pid} -n ip neigh show dev net1", f"nsenter -t {pid} -n ip -s link show net1",
            f"ip -s -d link show {pf}")
    return "\n".join(f"$ {c}\n{shell.run(c)[1]}" for c in cmds)[-4000:]


def host_vfs(shell: GuestShell, pf_pci: str) -> dict[str, tuple[str, str]]:
    """PCI address -> (netdev name, MAC) of every VF netdev in the guest's host namespace. A netdev that
    leaves while it is read (a VF moving back from a pod's namespace during DEL) has no MAC on its line
    and is left out, as it would be a moment later: the callers poll until the VFs are back."""
    out = shell.check(f"for l in /sys/bus/pci/devices/{pf_pci}/virtfn*; do d=$(readlink -f \"$l\"); "
                     "for n in \"$d\"/net/*; do if [ -e \"$n\" ]; then "
                     "echo \"${d##*/} ${n##*/} $(cat \"$n/address\" 2>/dev/null)\"; fi; done; done")
    rows = [line.split() for line in out.splitlines()]
    return {row[0]: (row[1], row[2]) for row in rows if len(row) == 3}


def kubelet_pid(shell: GuestShell) -> int:
    return int(shell.check(f"cat {KUBELET_PID_FILE}").strip())


def kill_kubelet(shell: GuestShell) -> int:
    """Kill the guest's kubelet (node.sh's supervisor starts a new one); returns the killed pid."""
    pid = kubelet_pid(shell)
    shell.check(f"kill {pid}")
    return pid


REGISTERED = "Got registration request from device plugin with resource"


def registrations(shell: GuestShell, resource: str) -> int:
    """How many times the guest's kubelet logged a registration of `resource` (kubelet.log, on the job
    share: node.sh appends every kubelet's output to it)."""
    log = shell.guest.job / "kubelet.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return sum(1 for line in text.splitlines() if REGISTERED in line and resource in line)


def socket_inode(shell: GuestShell) -> int | None:
    """The device plugin's socket inode (the kubelet removes it at start; the plugin serves a new one)."""
    rc, out, _err = shell.run(f"stat -c %i {DEVICE_PLUGIN_SOCKET}")
    return int(out.strip()) if rc == 0 else None


#: The kubelet's container logs on the guest (the kubelet config's podLogsDir, under the node's directory).
POD_LOGS = NODE_DIR / "pod-logs"
CNI_SERVER_LOGS = f"{POD_LOGS}/*_sriov-network-config-daemon-*/sriov-cni-server/*.log"


def cni_server_log(shell: GuestShell) -> str:
    """Every sriov-cni-server container log of the guest, as the kubelet wrote them (CRI format: time,
    stream, tag, then the server's JSON line)."""
    return shell.check(f"cat {CNI_SERVER_LOGS} 2>/dev/null; true")


def cni_durations(log: str, command: str, plugin: str = "sriov") -> list[float]:
    """`duration_ms` of every `command` (ADD, DEL) the sriov-cni-server logged for `plugin`."""
    durations = []
    for line in log.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            event = json.loads(line[start:])
        except ValueError:
            continue
        if (isinstance(event, dict) and event.get("event") == f"cni_{command.lower()}"
                and event.get("plugin") == plugin and event.get("duration_ms") is not None):
            durations.append(float(event["duration_ms"]))
    return durations


def vf_differences(before: dict[str, tuple[str, str]], after: dict[str, tuple[str, str]],
                   used: set[str]) -> dict[str, dict[str, Any]]:
    """The used VFs whose (name, MAC) in the host differs from before the pods: pci -> before, after."""
    return {pci: {"before": list(before[pci]), "after": list(after[pci]) if pci in after else None}
            for pci in sorted(used) if after.get(pci) != before.get(pci)}


def vf_evidence(shell: GuestShell, pf: str) -> str:
    """The PF's VF table, every link and the kernel's last messages, when VFs did not come back."""
    cmds = (f"ip -d link show {pf}", "ip -br link", "dmesg | tail -n 80")
    return "\n".join(f"$ {c}\n{shell.run(c)[1]}" for c in cmds)[-8000:]


#: The sriov CNI's state on the guest (the sriov-cni-server's --state-dir, a hostPath): ADD's caches.
CNI_CACHES = "/var/lib/cni/sriov"


def add_found(shell: GuestShell) -> dict[str, tuple[str, str]]:
    """PCI address -> (host netdev name, MAC) as each running ADD found its VF (OrigVfState in the
    caches DEL restores from)."""
    found = {}
    caches = shell.check(f"for f in {CNI_CACHES}/*-net1; do [ -f \"$f\" ] && cat \"$f\" && echo; done; true")
    for line in caches.splitlines():
        if line.strip():
            cache = json.loads(line)
            orig = cache.get("OrigVfState") or {}
            found[str(cache["deviceID"])] = (str(orig.get("HostIFName")), str(orig.get("EffectiveMAC")).lower())
    return found


#: The metrics exporter the operator deploys with the metricsExporter feature gate (hostNetwork, plain HTTP
#: on the node's IP without kube-rbac-proxy).
EXPORTER_APP = "sriov-network-metrics-exporter"
EXPORTER_PORT = 9110
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def kubepoddevices(shell: GuestShell) -> list[dict[str, str]]:
    """The labels of every `sriov_kubepoddevice` series, scraped from the guest's exporter by the guest."""
    text = shell.check(f"busybox wget -q -O - http://{GUEST_IP}:{EXPORTER_PORT}/metrics")
    return [dict(_LABEL.findall(line[line.index("{"):line.rindex("}")]))
            for line in text.splitlines() if line.startswith("sriov_kubepoddevice{")]


VFIO_PROBE = (
    "modprobe vfio-pci 2>&1; echo \"vfio_pci_loaded $([ -d /sys/module/vfio_pci ] && echo yes || echo no)\"; "
    "echo \"iommu_groups $(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)\"; "
    "echo \"noiommu_param $(cat /sys/module/vfio/parameters/enable_unsafe_noiommu_mode 2>/dev/null || echo absent)\"; "
    "echo \"cmdline $(cat /proc/cmdline)\"; dmesg | grep -i -E 'iommu|dmar|vfio' | tail -n 20; true")


def vfio_facts(shell: GuestShell) -> str:
    """What the guest offers vfio-pci: the module, IOMMU groups, the no-IOMMU switch, the kernel's words."""
    return shell.check(VFIO_PROBE)[-4000:]


def device_holders(rows: list[dict[str, str]]) -> dict[str, str]:
    """pciAddr -> namespace/pod from `sriov_kubepoddevice` series."""
    return {r.get("pciAddr", ""): f"{r.get('namespace')}/{r.get('pod')}" for r in rows}


def median_ms(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None
