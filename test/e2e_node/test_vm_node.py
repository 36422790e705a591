"""The QEMU guest as worker node `sriovop-vm-1`: the operator's config-daemon pod configures real igbvf VFs.

Host: the QEMU guest (TCG), joined to a `sriovop dev cluster up --nodes 1` cluster on this machine whose
node 1 (control plane) runs the operator and its webhooks from `make images`, installed with
`kubectl apply -k manifests/crds` and `kubectl apply -k manifests/`. The guest runs containerd and a
kubelet (hack/vm/node.sh, test/support/vm_node.py); the operator's config-daemon DaemonSet lands its pod
there, and that pod, from the config-daemon image, configures the emulated 82576's VFs. The guest has two
82576 PFs and QEMU's intel-iommu, and boots with `intel_iommu=on iommu=pt` (what the daemon wants for
vfio-pci), so its second PF's VFs can be bound to vfio-pci without a reboot.

One scenario (module fixture) records what happened; the tests assert on the record, and
`make e2e-node` prints the summary as the last line (build/e2e-node.json):
1. join: the node is Ready and schedulable, labelled worker; a pause pod runs on it, through the attach
   plugin (its network-status names the bridge network as the default);
2. the config-daemon pod is Ready on the guest node;
3. a policy for 4 VFs on eth0 and a vfio-pci policy for 2 VFs on eth1 -> NodeState Succeeded (the
   device-plugin pod's main container, sampled every second, never runs while the guest's PF lacks the
   configuration: its wait-for-config init container holds it); every eth0 VF in the status
   cross-checked against the guest's sysfs and `ip -j link` (run in the guest, outside the pod);
3b. the vfio pod (before the netdevice pods, and deleted before them: the exporter's rows name only
   those): eth1's VFs on vfio-pci in the same boot (the guest's boot_id unchanged), each with its
   `/dev/vfio/<group>`; `openshift.io/igbvfio: 2` allocatable; a SriovNetwork (VLAN 200, no IPAM) for it;
   a pod naming it in its annotation runs with `/dev/vfio/<group>` and `/dev/vfio/vfio` (our device
   plugin's Allocate) and opens both from inside the container (`ctr task exec`), the group being that of
   the VF in PCIDEVICE_OPENSHIFT_IO_IGBVFIO; the network-status device-info names the same PCI address and
   the PF's VF entry has VLAN 200 (the sriov CNI sets PF-side attributes only on a vfio-pci VF);
4. pods with a VF: the allocatable `openshift.io/igbvfs: 4` comes from our device-plugin pod; a SriovNetwork
   (VLAN 100, host-local IPAM) -> the operator's NAD in `default`; two pods naming it only in
   `k8s.v1.cni.cncf.io/networks` get the resource request from the injector and run on the guest node,
   each with `net1` an igbvf VF: driver (sysfs and `ethtool -i`), the same PCI address in sysfs, in the
   pod's PCIDEVICE_OPENSHIFT_IO_IGBVFS and in the network-status device-info; the net1 MAC and VLAN 100
   on the PF's VF entry (`ip -d link show eth0` in the guest); an IPAM address; a ping from one pod to the
   other over net1 (VF to VF through the emulated 82576's switch). Deleting the pods returns both VFs to
   the guest's namespace with their names and MACs, allocatable 4 again. The guest kubelet is killed (its
   supervisor starts a new one, which removes the plugin sockets): the device plugin serves and registers
   again and the allocatable returns;
5. drain: a Deployment's pod that requests the VF resource runs on the guest node; the policy changes to
   5 VFs, MTU 9000; the node is cordoned, the pod is evicted through the Eviction API (its
   DisruptionTarget condition) and replaced once the node is uncordoned, the bare pause pod (no VF
   resource) stays (partial drain); the device-plugin pod is replaced (new UID) and gated again;
6. the policy changes to 6 VFs; while the daemon applies it its pod is force-deleted (grace period 0);
   the DaemonSet's new pod converges: Succeeded, every VF cross-checked again;
7. with `enableOperatorWebhook: false` (the operator deletes its webhook configurations) a policy asks
   for 8 VFs, above the 82576's sriov_totalvfs (7): NodeState Failed, lastSyncError naming the PF and the
   step, the daemon pod neither restarted nor unready; the webhook is switched back on;
8. the policy is deleted -> the PF is reset (sriov_numvfs 0, no VF in the status).
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1.kinds import (
    NETWORK_ATTACHMENT_DEFINITION,
    SRIOV_NETWORK,
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_OPERATOR_CONFIG,
)
from sriovop.devcluster.images.load import load_archives
from sriovop.devcluster.nodecluster import schedulable
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ConnectionFailed, NotFound
from sriovop.runtime.kinds import DEPLOYMENT, NODE, POD
from test.support import vm_node_pods as pods
from test.support import vm_node_vfio as vfio
from test.support import vm_pod_vf_reset as vf_reset
from test.support.cluster import cluster_down, cluster_up, pod_on, running_pod
from test.support.poll import wait_for
from test.support.vm_daemon import GuestShell
from test.support.vm_node import NODE_NAME, ClusterAccess, join, keep_logs, node_vm, start_node
from test.support.vm_node_drain import PodEvents, running_workload, workload_deployment
from test.support.vm_node_webhook import admitted, set_operator_webhook

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(5400)]

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "build" / "images"
# What a worker runs: the config daemon, the CNI images its init containers use and the device plugin.
GUEST_IMAGES = ("config-daemon.tar", "sriov-cni.tar", "ib-sriov-cni.tar", "device-plugin.tar")
RESULT = REPO / "build" / "e2e-node.json"
RECORD = REPO / "build" / "e2e-node-record.json"  # every figure of the scenario, for diagnosis
LOGS = REPO / "build" / "e2e-node-logs"
NAMESPACE = "sriov-network-operator"
PF_PCI = "0000:01:00.0"
PF_NAME = "eth0"
NUM_VFS = 4
POLICY = "vm-igb"
CHANGED_VFS = 5
CHANGED_MTU = 9000
FORCE_DELETE_VFS = 6
TOTAL_VFS = 7  # the 82576's sriov_totalvfs
RESOURCE = "openshift.io/igbvfs"
# The second PF (the guest boots with the IOMMU and `intel_iommu=on iommu=pt`): VFs bound to vfio-pci.
VFIO_PF_PCI = "0000:02:00.0"
VFIO_PF_NAME = "eth1"
VFIO_POLICY = "vm-igb-vfio"
VFIO_RESOURCE = "openshift.io/igbvfio"
VFIO_NUM_VFS = 2
# TCG guest under a loaded machine: every step gets minutes.
STEP_TIMEOUT_S = 900.0
#: A VF whose igbvf reset handshake worked has its carrier within seconds of `ip link set up` (idle guest).
#: After this, a pod's net1 without one gets igbvf resets (test/support/vm_pod_vf_reset.py).
LINK_TIMEOUT_S = 90.0

SYSFS_VFS = f"pf=/sys/bus/pci/devices/{PF_PCI}\n" + r"""
for l in "$pf"/virtfn*; do
  [ -e "$l" ] || continue
  d=$(readlink -f "$l")
  printf '%s %s %s %s\n' "${d##*/}" "$(cat "$d/device")" "$(basename "$(readlink "$d/driver")")" \
    "$(ls "$d/net" 2>/dev/null)"
done
echo "numvfs $(cat "$pf/sriov_numvfs")"
"""


def _wait(what: str, probe: Callable[[], Any], timeout: float = STEP_TIMEOUT_S, interval: float = 1.0) -> Any:
    """`wait_for` with this module's argument order and at most one probe a second: probes read the
    API server and run commands in a guest under emulation, both slow on a loaded machine. Only an API
    server starved by the load means "not yet"; any other error of a probe fails the step at once."""
    return wait_for(probe, timeout, what, interval=interval, tolerate=(NotFound, ConnectionFailed))


def _kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", *args], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def _node_state(kube: Client) -> dict[str, Any]:
    return dict(kube.get(SRIOV_NETWORK_NODE_STATE, NODE_NAME, NAMESPACE))


def _pf_status(state: dict[str, Any], pci: str = PF_PCI) -> dict[str, Any] | None:
    for iface in (state.get("status") or {}).get("interfaces") or []:
        if iface.get("pciAddress") == pci:
            return dict(iface)
    return None


def _daemon_pod(kube: Client) -> dict[str, Any] | None:
    for pod in kube.list(POD, NAMESPACE, label_selector="app=sriov-network-config-daemon"):
        if (pod.get("spec") or {}).get("nodeName") != NODE_NAME or pod["metadata"].get("deletionTimestamp"):
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return dict(pod)
    return None


def _policy(num_vfs: int, mtu: int = 1500, *, name: str = POLICY, resource: str = RESOURCE, pf: str = PF_NAME,
            device_type: str = "netdevice") -> dict[str, Any]:
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {
                "resourceName": resource.split("/")[1], "numVfs": num_vfs, "mtu": mtu, "priority": 10,
                "deviceType": device_type,
                "nicSelector": {"vendor": "8086", "deviceID": "10c9", "pfNames": [pf]},
                "nodeSelector": {"kubernetes.io/hostname": NODE_NAME}}}


def _allocatable(kube: Client, want: str, resource: str = RESOURCE) -> str | None:
    """The guest node's allocatable count of `resource` once it is `want` (else None)."""
    value = ((kube.get(NODE, NODE_NAME).get("status") or {}).get("allocatable") or {}).get(resource)
    return value if value == want else None


def _device_plugin_running(kube: Client, old_uid: str = "") -> dict[str, Any] | None:
    """The device-plugin pod whose main container runs on the guest node (not the one `old_uid`), or None."""
    for pod in kube.list(POD, NAMESPACE, label_selector="app=sriov-device-plugin"):
        if (pod.get("spec") or {}).get("nodeName") != NODE_NAME or pod["metadata"]["uid"] == old_uid:
            continue
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if (status.get("state") or {}).get("running"):
                return dict(pod)
    return None


def _configured(kube: Client, num_vfs: int, mtu: int) -> dict[str, Any] | None:
    """The PF's status once the NodeState is Succeeded with `num_vfs` VFs at `mtu` (else None)."""
    state = _node_state(kube)
    pf = _pf_status(state)
    if (state.get("status") or {}).get("syncStatus") != "Succeeded" or pf is None:
        return None
    vfs = pf.get("Vfs") or []
    return pf if len(vfs) == num_vfs and all(int(vf.get("mtu") or 0) == mtu for vf in vfs) else None


def _kernel_view(shell: GuestShell) -> dict[str, Any]:
    """The guest kernel's VFs of the PF (sysfs) and its netlink view, read in the guest outside the pod."""
    rc, out, err = shell.run(SYSFS_VFS)
    assert rc == 0, err
    lines = out.strip().splitlines()
    vfs = {pci: {"device": dev, "driver": drv, "netdev": rest[0] if rest else ""}
           for pci, dev, drv, *rest in (ln.split() for ln in lines[:-1])}
    rc, out, err = shell.run("ip -j link show")
    assert rc == 0, err
    links = {link["ifname"]: link for link in json.loads(out)}
    return {"numvfs": int(lines[-1].split()[1]), "vfs": vfs, "links": links}


def _kernel_configured(shell: GuestShell, num_vfs: int, mtu: int) -> bool:
    kernel = _kernel_view(shell)
    return bool(kernel["numvfs"] == num_vfs and int(kernel["links"][PF_NAME]["mtu"]) == mtu)


def _gated_probe(kube: Client, shell: GuestShell, num_vfs: int, mtu: int, old_uid: str,
                 early: list[str]) -> Callable[[], dict[str, Any] | None]:
    """A probe for "Succeeded with `num_vfs` VFs at `mtu`" that also samples the device-plugin gate: a
    device-plugin pod other than `old_uid` whose main container runs while the NodeState is not yet
    Succeeded is early unless the guest's PF already has the configuration (the daemon unblocks the pod
    once the host is configured, just before it writes Succeeded: upstream's order)."""
    def probe() -> dict[str, Any] | None:
        running = _device_plugin_running(kube, old_uid)
        pf = _configured(kube, num_vfs, mtu)
        if pf is None and running is not None and not _kernel_configured(shell, num_vfs, mtu):
            early.append(str(running["metadata"]["name"]))
        return pf
    return probe


def _exporter_running(kube: Client) -> dict[str, Any] | None:
    """The metrics exporter's pod on the guest node, Running with its containers ready."""
    for pod in kube.list(POD, NAMESPACE, label_selector={"app": pods.EXPORTER_APP}):
        status = pod.get("status") or {}
        if (pod["spec"].get("nodeName") == NODE_NAME and status.get("phase") == "Running"
                and all(c.get("ready") for c in status.get("containerStatuses") or [{}])):
            return dict(pod)
    return None


def _ready_daemon_pod(kube: Client) -> dict[str, Any]:
    pod = _daemon_pod(kube)
    assert pod is not None, "no Ready config-daemon pod on the guest node"
    return pod


def _restarts(pod: dict[str, Any]) -> int:
    return sum(int(s.get("restartCount") or 0) for s in (pod.get("status") or {}).get("containerStatuses") or [])


def _cross_check(pf: dict[str, Any], kernel: dict[str, Any], num_vfs: int, mtu: int) -> int:
    """Every VF the daemon reports is the kernel's: same PCI address, igbvf-bound netdev, MAC, MTU."""
    reported = pf.get("Vfs") or []
    assert kernel["numvfs"] == num_vfs == pf.get("numVfs") == len(reported), (kernel["numvfs"], pf)
    assert int(kernel["links"][PF_NAME]["mtu"]) == mtu, kernel["links"][PF_NAME]
    assert sorted(v["pciAddress"] for v in reported) == sorted(kernel["vfs"]), (reported, kernel["vfs"])
    for vf in reported:
        dev = kernel["vfs"][vf["pciAddress"]]
        assert dev["driver"] == "igbvf" and dev["device"] == "0x10ca", dev
        assert vf["name"] == dev["netdev"], (vf, dev)
        link = kernel["links"][dev["netdev"]]
        assert vf["mac"].lower() == link["address"].lower(), (vf, link)
        assert int(vf["mtu"]) == int(link["mtu"]) == mtu, (vf, link)
        assert vf.get("driver") == "igbvf", vf
    return len(reported)


def _running(kube: Client, name: str) -> Callable[[], dict[str, Any] | None]:
    return lambda: running_pod(kube, "default", name)


def _pods_step(kube: Client, shell: GuestShell, record: dict[str, Any]) -> None:
    """Two pods on the SriovNetwork (annotation only) each get a VF from our device plugin through the
    injector, the attach plugin and our sriov CNI; deleting them returns the VFs; a kubelet restart makes
    the device plugin register again."""
    # The allocatable comes from the operator-rendered device-plugin pod (`sriovop device-plugin`) on the guest:
    # it found the guest's igbvf VFs and registered them with the guest's kubelet.
    record["device_plugin_allocatable"] = _wait(f"{RESOURCE}: {NUM_VFS} allocatable on the guest node",
                                                lambda: _allocatable(kube, str(NUM_VFS)))
    before = pods.host_vfs(shell, PF_PCI)
    record["vfs_before"] = before
    # The metrics exporter (feature gate) on the guest node, to name the pod holding each VF.
    kube.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"featureGates": {"metricsExporter": True}}}, NAMESPACE)
    kube.create(SRIOV_NETWORK, pods.sriov_network(NAMESPACE, RESOURCE.split("/")[1]), NAMESPACE)
    nad = _wait("the operator's NetworkAttachmentDefinition in default",
                lambda: kube.get(NETWORK_ATTACHMENT_DEFINITION, pods.NETWORK, "default"))
    record["nad_resource"] = nad["metadata"]["annotations"].get("k8s.v1.cni.cncf.io/resourceName")
    for name in pods.POD_NAMES:
        created = kube.create(POD, pods.vf_pod(name, NODE_NAME), "default")
        record.setdefault("injected_requests", []).append(pods.requested(created, RESOURCE))
    running = [_wait(f"pod {name} Running on the guest node", _running(kube, name)) for name in pods.POD_NAMES]
    env_key = "PCIDEVICE_" + RESOURCE.replace(".", "_").replace("/", "_").upper()
    seen: list[dict[str, Any]] = []
    for pod in running:
        status = pods.network_status(pod)
        pid = pods.container_pid(shell, pod)
        vf = pods.pod_vf(shell, pid, env_key)
        entry = pods.pf_vf_entry(shell, PF_NAME, PF_PCI, vf.pci_sysfs)
        seen.append({"pod": pod["metadata"]["name"], "pid": pid, "status": status, "vf": vf.as_record(),
                     "pf_entry": entry, "pf_vlan": pods.vlan_of(entry)})
    record["pod_vfs"] = seen
    record["pods_with_vf"] = sum(
        1 for s in seen
        if s["vf"]["driver_sysfs"] == s["vf"]["ethtool"].get("driver") == "igbvf"
        and s["vf"]["pci_sysfs"] == s["vf"]["env_pci"] == s["vf"]["ethtool"].get("bus-info")
        == s["status"]["device-info"]["pci"]["pci-address"] and s["vf"]["pci_sysfs"] in before
        and s["status"]["interface"] == "net1" and s["pf_vlan"] == pods.VLAN
        and s["pf_entry"]["address"].lower() == s["vf"]["mac"].lower() == s["status"]["mac"].lower()
        and s["vf"]["ips"] == s["status"]["ips"]
        and all(ipaddress.ip_address(ip) in ipaddress.ip_network(pods.SUBNET) for ip in s["vf"]["ips"]))
    record["cni_add_ms"] = pods.median_ms(pods.cni_durations(pods.cni_server_log(shell), "ADD"))
    found = pods.add_found(shell)
    record["add_found"] = found
    _wait("the metrics exporter pod running on the guest node", lambda: _exporter_running(kube))
    holders = {s["vf"]["pci_sysfs"]: f"default/{s['pod']}" for s in seen}
    scraped: list[list[dict[str, str]]] = []

    scrape_errors: list[str] = []

    def kubepoddevice_names_the_holders() -> bool:
        # A Running exporter pod may not listen yet (its imports are slow under TCG): a refused scrape is
        # asked again until the deadline, and the last refusal is named if it never answers.
        try:
            scraped.append(pods.kubepoddevices(shell))
        except AssertionError as exc:
            scrape_errors.append(str(exc))
            return False
        return pods.device_holders(scraped[-1]) == holders

    try:
        _wait("sriov_kubepoddevice naming the pod holding each VF", kubepoddevice_names_the_holders)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last scrape: {scraped[-1:] or scrape_errors[-1:]}") from None
    record["kubepoddevice"] = pods.device_holders(scraped[-1])
    record["kubepoddevice_rows"] = scraped[-1]
    a, b = seen
    try:
        _wait("net1 of both pods with a link", lambda: all(pods.has_link(shell, s["pid"]) for s in seen),
              timeout=LINK_TIMEOUT_S)
        record["vf_links_up"] = True
    except AssertionError as exc:  # QEMU's 82576 failed a VF's reset handshake: igbvf resets it again
        record["vf_links_up"] = str(exc)
    pids = {s["pod"]: s["pid"] for s in seen}
    resets = vf_reset.carrier_on_all(shell, pids)
    ok, evidence = pods.ping(shell, a["pid"], b["vf"]["ips"][0])
    if not ok and not all(pods.has_link(shell, pid) for pid in pids.values()):
        # A carrier lost again between the resets and the ping: once more, and ping again.
        resets += vf_reset.carrier_on_all(shell, pids)
        ok, evidence = pods.ping(shell, a["pid"], b["vf"]["ips"][0])
    if resets:
        record["vf_link_resets"] = resets
    record["vf_ping"] = evidence
    record["vf_traffic"] = "vf-to-vf" if ok else False
    if not ok:
        record["vf_traffic_evidence"] = pods.traffic_evidence(shell, a["pid"], PF_NAME)

    for name in pods.POD_NAMES:
        kube.delete(POD, name, "default")
    _wait("both pods gone", lambda: not [p for p in kube.list(POD, "default")
                                         if p["metadata"]["name"] in pods.POD_NAMES])
    used = {s["vf"]["pci_sysfs"] for s in seen}
    listed: list[dict[str, tuple[str, str]]] = []

    # DEL's contract: each VF back as its ADD found it (the caches' OrigVfState); the listing taken before
    # the pods is reported beside it (a difference there is the host changing before ADD, not DEL).
    def returned_vfs() -> dict[str, tuple[str, str]] | None:
        listed.append(pods.host_vfs(shell, PF_PCI))
        return listed[-1] if not pods.vf_differences(found, listed[-1], used) else None

    try:
        returned = _wait("both VFs back in the guest's host namespace with the names and MACs ADD found",
                         returned_vfs)
    except AssertionError as exc:
        after = listed[-1] if listed else {}
        record["vfs_differing"] = {"from_add": pods.vf_differences(found, after, used),
                                   "from_before_pods": pods.vf_differences(before, after, used)}
        record["vfs_evidence"] = pods.vf_evidence(shell, PF_NAME)
        raise AssertionError(f"{exc}; VFs whose (name, MAC) differ, found -> after: {record['vfs_differing']}"
                             ) from None
    record["vfs_returned"] = len([pci for pci in used if returned.get(pci) == found[pci]])
    record["vfs_as_before_pods"] = len([pci for pci in used if returned.get(pci) == before[pci]])
    kube.patch(SRIOV_OPERATOR_CONFIG, "default", {"spec": {"featureGates": {"metricsExporter": False}}}, NAMESPACE)
    record["vfio_facts"] = pods.vfio_facts(shell)
    record["allocatable_after_pods"] = _wait(f"{RESOURCE}: {NUM_VFS} allocatable after the pods",
                                             lambda: _allocatable(kube, str(NUM_VFS)))

    inode = pods.socket_inode(shell)
    registered = pods.registrations(shell, RESOURCE)
    record["registrations_before_restart"] = registered
    killed = pods.kill_kubelet(shell)
    started = time.monotonic()
    _wait("a new guest kubelet", lambda: pods.kubelet_pid(shell) != killed)
    _wait("the device plugin's socket served again", lambda: (
        (new := pods.socket_inode(shell)) is not None and new != inode))
    _wait("the new kubelet's registration of the device plugin",
          lambda: pods.registrations(shell, RESOURCE) > registered)
    _wait(f"{RESOURCE}: {NUM_VFS} allocatable after the kubelet restart", lambda: _allocatable(kube, str(NUM_VFS)))
    record["device_plugin_reregister_s"] = round(time.monotonic() - started, 1)
    _wait("the guest node Ready after the kubelet restart", lambda: schedulable(kube.get(NODE, NODE_NAME)))


def _boot_id(shell: GuestShell) -> str:
    rc, out, err = shell.run("cat /proc/sys/kernel/random/boot_id")
    assert rc == 0, err
    return out.strip()


def _vfio_configured(kube: Client) -> dict[str, Any] | None:
    """The vfio PF's status once the NodeState is Succeeded with its VFs on vfio-pci (else None)."""
    state = _node_state(kube)
    pf = _pf_status(state, VFIO_PF_PCI)
    if (state.get("status") or {}).get("syncStatus") != "Succeeded" or pf is None:
        return None
    vfs = pf.get("Vfs") or []
    return pf if len(vfs) == VFIO_NUM_VFS and all(vf.get("driver") == "vfio-pci" for vf in vfs) else None


def _vfio_step(kube: Client, shell: GuestShell, record: dict[str, Any]) -> None:
    """A pod on the vfio-pci SriovNetwork gets `/dev/vfio/<group>` of the VF named in its environment."""
    pf = _wait("the vfio PF Succeeded with its VFs on vfio-pci", lambda: _vfio_configured(kube))
    kernel = vfio.host_vfs(shell, VFIO_PF_PCI)
    record["vfio_host_vfs"] = kernel
    record["vfio_status_vfs"] = [(vf["pciAddress"], vf.get("driver")) for vf in pf.get("Vfs") or []]
    record["vfio_allocatable"] = _wait(f"{VFIO_RESOURCE}: {VFIO_NUM_VFS} allocatable on the guest node",
                                       lambda: _allocatable(kube, str(VFIO_NUM_VFS), VFIO_RESOURCE))
    kube.create(SRIOV_NETWORK, vfio.vfio_network(NAMESPACE, VFIO_RESOURCE.split("/")[1]), NAMESPACE)
    _wait("the operator's vfio NetworkAttachmentDefinition in default",
          lambda: kube.get(NETWORK_ATTACHMENT_DEFINITION, vfio.NETWORK, "default"))
    created = kube.create(POD, vfio.vfio_pod(NODE_NAME), "default")
    record["vfio_injected_request"] = pods.requested(created, VFIO_RESOURCE)
    pod = _wait(f"pod {vfio.POD_NAME} Running on the guest node", _running(kube, vfio.POD_NAME))
    env_key = "PCIDEVICE_" + VFIO_RESOURCE.replace(".", "_").replace("/", "_").upper()
    seen = vfio.pod_vfio(shell, pod, pods.container_pid(shell, pod), env_key)
    entries = json.loads((pod["metadata"].get("annotations") or {}).get(pods.STATUS_ANNOTATION) or "[]")
    [status] = [e for e in entries if e.get("name") == f"default/{vfio.NETWORK}"]
    seen["status"] = status
    seen["pf_entry"] = pods.pf_vf_entry(shell, VFIO_PF_NAME, VFIO_PF_PCI, seen["pci"]) if seen["pci"] else {}
    record["vfio_pod_seen"] = seen
    host = kernel.get(seen["pci"]) or {}
    ok = (host.get("driver") == "vfio-pci" and host.get("group") == seen["group"] != ""
          and seen["init_dev_vfio"] == sorted([seen["group"], "vfio"])
          and vfio.device_rules_only_for(seen, seen["group"]) and seen["open"] == "opened"
          and ((status.get("device-info") or {}).get("pci") or {}).get("pci-address") == seen["pci"]
          and pods.vlan_of(seen["pf_entry"]) == vfio.VLAN)
    record["vfio_pod"] = {"group": seen["group"], "pci": seen["pci"], "env": f"{env_key}={seen['pci']}",
                          "dev": seen["init_dev_vfio"], "checked": ok}
    kube.delete(POD, vfio.POD_NAME, "default")
    _wait("the vfio pod gone", lambda: not [p for p in kube.list(POD, "default")
                                            if p["metadata"]["name"] == vfio.POD_NAME])


def _drain_step(kube: Client, shell: GuestShell, record: dict[str, Any], plugin_uid: str,
                early: list[str]) -> None:
    """MTU and VF count change: the drain handshake evicts the workload pod from the guest node."""
    bystander = kube.get(POD, "vm-pause", "default")["metadata"]["uid"]
    kube.create(DEPLOYMENT, workload_deployment(NODE_NAME, RESOURCE), "default")
    workload = _wait("the workload pod Running on the guest node",
                     lambda: running_workload(kube, "default", NODE_NAME))
    uid = workload["metadata"]["uid"]
    events = PodEvents(kube, "default", kube.list_page(POD, "default", limit=1).resource_version)
    try:
        started = time.monotonic()
        kube.patch(SRIOV_NETWORK_NODE_POLICY, POLICY, {"spec": {"numVfs": CHANGED_VFS, "mtu": CHANGED_MTU}},
                   NAMESPACE)
        gated = _gated_probe(kube, shell, CHANGED_VFS, CHANGED_MTU, plugin_uid, early)
        cordoned: list[bool] = []

        def applied() -> dict[str, Any] | None:
            if kube.get(NODE, NODE_NAME)["spec"].get("unschedulable"):
                cordoned.append(True)
            return gated()

        pf = _wait("NodeState Succeeded after the MTU and VF count change", applied, interval=0.5)
        record["drain_change_s"] = round(time.monotonic() - started, 1)
        record["cordoned_during_drain"] = bool(cordoned)
        _wait("the guest node uncordoned", lambda: not kube.get(NODE, NODE_NAME)["spec"].get("unschedulable"))
        replacement = _wait("a replacement workload pod Running on the guest node", lambda: (
            p if (p := running_workload(kube, "default", NODE_NAME)) and p["metadata"]["uid"] != uid else None))
        _wait("the evicted pod's deletion seen by the watch", lambda: events.deleted(uid))
    finally:
        events.stop()
    record["workload_evicted"] = events.eviction_of(uid) is not None
    record["workload_replaced"] = replacement["metadata"]["uid"] != uid
    record["bystander_kept"] = running_pod(kube, "default", "vm-pause") is not None and \
        kube.get(POD, "vm-pause", "default")["metadata"]["uid"] == bystander
    new_plugin = _wait("a new device-plugin pod running on the guest node",
                       lambda: _device_plugin_running(kube, plugin_uid))
    record["device_plugin_replaced"] = new_plugin["metadata"]["uid"] != plugin_uid
    record["device_plugin_allocatable_after_change"] = _wait(
        f"{RESOURCE}: {CHANGED_VFS} allocatable from the new device-plugin pod",
        lambda: _allocatable(kube, str(CHANGED_VFS)))
    record["vfs_checked"] += _cross_check(pf, _kernel_view(shell), CHANGED_VFS, CHANGED_MTU)


def _force_delete_step(kube: Client, shell: GuestShell, record: dict[str, Any]) -> None:
    """A VF count change during which the config-daemon pod is force-deleted (grace period 0)."""
    old_pod = _ready_daemon_pod(kube)
    kube.patch(SRIOV_NETWORK_NODE_POLICY, POLICY, {"spec": {"numVfs": FORCE_DELETE_VFS}}, NAMESPACE)
    phase = _wait("the daemon to start applying the change", lambda: (
        "InProgress" if (_node_state(kube).get("status") or {}).get("syncStatus") == "InProgress"
        else "done" if _configured(kube, FORCE_DELETE_VFS, CHANGED_MTU) else None), interval=0.2)
    record["force_deleted_mid_apply"] = phase == "InProgress"
    kube.delete(POD, old_pod["metadata"]["name"], NAMESPACE, grace_period_seconds=0)
    started = time.monotonic()
    _wait("a new config-daemon pod Ready", lambda: (p := _daemon_pod(kube)) and p["metadata"]["uid"]
          != old_pod["metadata"]["uid"])
    pf = _wait("NodeState Succeeded after the change", lambda: _configured(kube, FORCE_DELETE_VFS, CHANGED_MTU))
    record["change_after_force_delete_s"] = round(time.monotonic() - started, 1)
    record["vfs_checked"] += _cross_check(pf, _kernel_view(shell), FORCE_DELETE_VFS, CHANGED_MTU)


def _failure_step(kube: Client, shell: GuestShell, record: dict[str, Any]) -> None:
    """numVfs above sriov_totalvfs, past the webhook (switched off as a user must): Failed, pod stays up."""
    set_operator_webhook(kube, NAMESPACE, False, _wait)
    try:
        daemon = _ready_daemon_pod(kube)
        refusals: list[str] = record.setdefault("refusals", [])
        _wait("the policy asking for too many VFs admitted", lambda: admitted(lambda: kube.patch(
            SRIOV_NETWORK_NODE_POLICY, POLICY, {"spec": {"numVfs": TOTAL_VFS + 1}}, NAMESPACE), refusals))

        def failed() -> dict[str, Any] | None:
            status = _node_state(kube).get("status") or {}
            return dict(status) if status.get("syncStatus") == "Failed" else None

        status = _wait("NodeState Failed for numVfs above sriov_totalvfs", failed)
        record["failed_error"] = status.get("lastSyncError", "")
        after = _ready_daemon_pod(kube)
        record["failed_daemon_pod_kept"] = (after["metadata"]["uid"] == daemon["metadata"]["uid"]
                                            and _restarts(after) == _restarts(daemon))
        record["failed_guest_numvfs"] = _kernel_view(shell)["numvfs"]
    finally:
        set_operator_webhook(kube, NAMESPACE, True, _wait)
    record["webhook_restored"] = True


def _keep_guest_evidence(shell: GuestShell, dest: Path) -> None:
    """The sriov-cni-server's container logs and the guest kernel's messages, next to the node's logs."""
    for name, cmd in (("sriov-cni-server.log", f"cat {pods.CNI_SERVER_LOGS}"), ("dmesg.log", "dmesg")):
        try:
            _rc, out, err = shell.run(f"{cmd} 2>&1", timeout=120)
        except Exception as exc:  # the guest may be gone: the other logs are still worth keeping
            out, err = "", f"not collected: {exc}"
        (dest / name).write_text(out + err)


@pytest.fixture(scope="module")
def scenario() -> Iterator[dict[str, Any]]:
    record: dict[str, Any] = {"passed": False}
    cluster_dir = Path(tempfile.mkdtemp(prefix="sop-vmn-", dir="/tmp"))
    guest = None
    shell: GuestShell | None = None
    try:
        cluster = cluster_up(cluster_dir, 1)
        access = ClusterAccess(cluster_dir, cluster.network.kubernetes_service_ip)
        kube = Client(load_config(cluster.kubeconfig))
        archives = sorted(IMAGES.glob("*.tar"))
        assert archives, f"no image archives in {IMAGES}: run `make images` first"
        load_archives(cluster_dir, archives)
        _kubectl(cluster.kubeconfig, "apply", "-k", str(REPO / "manifests" / "crds"))
        _kubectl(cluster.kubeconfig, "apply", "-k", str(REPO / "manifests"))

        guest = start_node(node_vm(access, [IMAGES / name for name in GUEST_IMAGES], igb=2, iommu=True))
        record["join_s"] = round(join(kube, guest), 1)
        joined = time.monotonic()
        shell = GuestShell(guest)

        pause = pod_on(NODE_NAME, "vm-pause")
        kube.create(POD, pause, "default")
        running = _wait("the pause pod on the guest node", lambda: running_pod(kube, "default", "vm-pause"))
        record["pause_pod_ip"] = running["status"]["podIP"]
        record["pause_network_status"] = (running["metadata"].get("annotations") or {}).get(
            "k8s.v1.cni.cncf.io/network-status")

        _wait("the config-daemon pod Ready on the guest node", lambda: _daemon_pod(kube))
        record["daemon_pod_ready_s"] = round(time.monotonic() - joined, 1)
        _wait("the NodeState reporting the 82576 PF", lambda: _pf_status(_node_state(kube)))

        started = time.monotonic()
        record["boot_id"] = _boot_id(shell)
        kube.create(SRIOV_NETWORK_NODE_POLICY, _policy(NUM_VFS), NAMESPACE)
        # vfio-pci on the second PF in the same sync: the boot already has the IOMMU arguments, so no reboot.
        kube.create(SRIOV_NETWORK_NODE_POLICY, _policy(VFIO_NUM_VFS, name=VFIO_POLICY, resource=VFIO_RESOURCE,
                                                       pf=VFIO_PF_NAME, device_type="vfio-pci"), NAMESPACE)
        early: list[str] = []
        pf = _wait("NodeState Succeeded with the VFs", _gated_probe(kube, shell, NUM_VFS, 1500, "", early))
        record["policy_to_succeeded_s"] = round(time.monotonic() - started, 1)
        plugin = _wait("the device-plugin pod running on the guest node", lambda: _device_plugin_running(kube))
        record["device_plugin_running"] = plugin["metadata"]["name"]
        record["vfs_checked"] = _cross_check(pf, _kernel_view(shell), NUM_VFS, 1500)

        _vfio_step(kube, shell, record)
        record["boot_id_after_vfio"] = _boot_id(shell)
        _pods_step(kube, shell, record)
        _drain_step(kube, shell, record, plugin["metadata"]["uid"], early)
        record["device_plugin_ran_early"] = early
        _force_delete_step(kube, shell, record)
        _failure_step(kube, shell, record)

        started = time.monotonic()
        _wait("the policy deletion admitted", lambda: admitted(
            lambda: kube.delete(SRIOV_NETWORK_NODE_POLICY, POLICY, NAMESPACE), record.setdefault("refusals", [])))

        def reset() -> bool:
            state = _node_state(kube)
            pf = _pf_status(state)
            return bool((state.get("status") or {}).get("syncStatus") == "Succeeded" and pf
                        and not pf.get("Vfs") and _kernel_view(shell)["numvfs"] == 0)

        _wait("the PF reset after the policy was deleted", reset)
        record["reset_s"] = round(time.monotonic() - started, 1)
        record["daemon_pod_still_ready"] = _daemon_pod(kube) is not None
        record["passed"] = True
        yield record
    except BaseException as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"[:4000]
        yield record
    finally:
        if guest is not None:
            keep_logs(guest, LOGS)
            if shell is not None:
                _keep_guest_evidence(shell, LOGS)
            guest.kill()
        try:
            if (cluster_dir / "cluster.json").exists():
                cluster_down(cluster_dir)
            shutil.rmtree(cluster_dir, ignore_errors=True)
        finally:
            RESULT.parent.mkdir(exist_ok=True)
            summary = {k: record.get(k) for k in ("join_s", "daemon_pod_ready_s", "policy_to_succeeded_s",
                                                   "reset_s", "vfs_checked", "pods_with_vf", "vf_traffic",
                                                   "vfs_returned", "device_plugin_reregister_s", "cni_add_ms",
                                                   "kubepoddevice", "vfio_pod",
                                                   "passed")}
            RESULT.write_text(json.dumps(summary) + "\n")
            RECORD.write_text(json.dumps(record, indent=1, default=str) + "\n")


def test_scenario_completed(scenario: dict[str, Any]) -> None:
    assert scenario["passed"], scenario.get("error")


def test_guest_joined_and_runs_a_pod(scenario: dict[str, Any]) -> None:
    assert scenario.get("join_s") is not None, scenario.get("error")
    ip = scenario.get("pause_pod_ip")
    assert ip and ipaddress.ip_address(ip) in ipaddress.ip_network("10.250.0.0/24"), scenario
    # the guest's sandbox went through the attach plugin: its network-status names the bridge as default
    [default] = json.loads(scenario.get("pause_network_status") or "[]")
    assert (default["interface"], default["ips"], default["default"]) == ("eth0", [ip], True), scenario


def test_daemon_pod_configured_real_vfs(scenario: dict[str, Any]) -> None:
    assert scenario.get("policy_to_succeeded_s") is not None, scenario.get("error")
    assert scenario.get("vfs_checked", 0) >= NUM_VFS, scenario


def test_device_plugin_starts_only_after_the_node_is_configured(scenario: dict[str, Any]) -> None:
    assert scenario.get("device_plugin_running"), scenario.get("error")
    assert scenario.get("device_plugin_ran_early") == [], scenario


def test_pods_get_a_real_vf_through_the_whole_chain(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest (node sriovop-vm-1): the real kubelet, our device-plugin pod, the injector, the
    attach plugin and our sriov CNI (sriov-cni-server container); the VF read back from the guest kernel."""
    assert scenario.get("pods_with_vf") == 2, (scenario.get("error"), scenario.get("pod_vfs"))
    assert scenario.get("injected_requests") == ["1", "1"], scenario.get("injected_requests")
    assert scenario.get("nad_resource") == RESOURCE, scenario


def test_two_vf_pods_exchange_traffic(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest; ping between the pods' net1 VFs (VLAN 100) through the emulated 82576."""
    assert scenario.get("vf_traffic") == "vf-to-vf", (scenario.get("error"), scenario.get("vf_ping"),
                                                      scenario.get("vf_links_up"), scenario.get("vf_link_resets"),
                                                      scenario.get("vf_traffic_evidence"))


def test_cni_server_logs_each_add_with_its_duration(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest; the sriov-cni-server container's log (the kubelet's pod logs) has a `cni_add`
    event with `duration_ms` for the pods' ADDs."""
    assert isinstance(scenario.get("cni_add_ms"), float), (scenario.get("error"), scenario.get("cni_add_ms"))


def test_kubepoddevice_names_the_pod_holding_each_vf(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest; the operator's metrics exporter (feature gate) on the guest node, scraped from
    the guest: each pod's VF PCI address maps to that pod, and to nothing else."""
    holders = {s["vf"]["pci_sysfs"]: f"default/{s['pod']}" for s in scenario.get("pod_vfs") or []}
    assert len(holders) == 2 and scenario.get("kubepoddevice") == holders, (scenario.get("error"), holders)


def test_deleted_pods_return_their_vfs(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest; the VFs back in the guest's namespace under the names and MACs ADD found."""
    assert scenario.get("vfs_returned") == 2, (scenario.get("error"), scenario.get("vfs_differing"))
    assert scenario.get("allocatable_after_pods") == str(NUM_VFS), scenario


def test_device_plugin_registers_again_after_a_kubelet_restart(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest's kubelet, killed and restarted by node.sh's supervisor."""
    assert scenario.get("device_plugin_reregister_s") is not None, scenario.get("error")


def test_drain_evicts_the_workload_pod_from_the_guest_node(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest (node sriovop-vm-1); evictions and cordon read from the API."""
    assert scenario.get("drain_change_s") is not None, scenario.get("error")
    assert scenario.get("cordoned_during_drain"), scenario
    assert scenario.get("workload_evicted"), scenario
    assert scenario.get("workload_replaced"), scenario
    assert scenario.get("bystander_kept"), scenario


def test_device_plugin_restarted_around_a_reconfiguration(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest; the operator-rendered device-plugin pod on it (`sriovop device-plugin`)."""
    assert scenario.get("device_plugin_replaced"), scenario.get("error")
    assert scenario.get("device_plugin_ran_early") == [], scenario


def test_device_plugin_advertises_the_guests_vfs(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest; the node's allocatable comes from our device-plugin pod registering the guest's
    real igbvf VFs with the guest's kubelet: 4 VFs, then 5 after the change (from the replacement pod)."""
    assert scenario.get("device_plugin_allocatable") == str(NUM_VFS), scenario.get("error")
    assert scenario.get("device_plugin_allocatable_after_change") == str(CHANGED_VFS), scenario


def test_change_converges_after_the_daemon_pod_is_force_deleted(scenario: dict[str, Any]) -> None:
    assert scenario.get("change_after_force_delete_s") is not None, scenario.get("error")
    assert scenario.get("force_deleted_mid_apply"), scenario
    assert scenario.get("vfs_checked") == NUM_VFS + CHANGED_VFS + FORCE_DELETE_VFS, scenario


def test_numvfs_above_totalvfs_fails_naming_the_step_and_the_daemon_pod_stays_up(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest's emulated 82576 (sriov_totalvfs 7), past the operator webhook switched off."""
    error = scenario.get("failed_error")
    assert error is not None, scenario.get("error")
    assert f"pf {PF_PCI}: step check-totalvfs" in error and f"above sriov_totalvfs {TOTAL_VFS} (ERANGE)" in error, error
    assert "[Errno" not in error, error
    assert scenario.get("failed_daemon_pod_kept"), scenario
    assert scenario.get("webhook_restored"), scenario


def test_policy_deleted_resets_the_pf(scenario: dict[str, Any]) -> None:
    assert scenario.get("reset_s") is not None, scenario.get("error")
    assert scenario.get("daemon_pod_still_ready"), scenario


def test_vfio_policy_binds_vfs_without_a_reboot(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest booted with intel-iommu and `intel_iommu=on iommu=pt`: the vfio-pci policy on
    the second PF reaches Succeeded in the boot it started in, every VF on vfio-pci with its group device."""
    assert scenario.get("vfio_host_vfs"), scenario.get("error")
    assert scenario.get("boot_id") == scenario.get("boot_id_after_vfio"), scenario
    host = scenario["vfio_host_vfs"]
    assert len(host) == VFIO_NUM_VFS and all(v["driver"] == "vfio-pci" and v["dev"] == "yes"
                                             for v in host.values()), host
    assert sorted(scenario.get("vfio_status_vfs") or []) == sorted((p, "vfio-pci") for p in host), scenario
    assert scenario.get("vfio_allocatable") == str(VFIO_NUM_VFS), scenario


def test_vfio_pod_gets_the_group_device_of_its_vf(scenario: dict[str, Any]) -> None:
    """Host: the QEMU guest: the real kubelet and containerd, our device plugin's vfio-pci Allocate, the
    injector, the attach plugin and our sriov CNI (PF side only); read back in the guest and by `ctr task
    exec` in the container: /dev/vfio/<group> of the VF in PCIDEVICE_OPENSHIFT_IO_IGBVFIO opens there."""
    seen = scenario.get("vfio_pod_seen")
    assert seen, scenario.get("error")
    assert scenario.get("vfio_injected_request") == "1", scenario
    pci, group = seen["pci"], seen["group"]
    assert pci in scenario["vfio_host_vfs"] and scenario["vfio_host_vfs"][pci]["group"] == group != "", seen
    # The container's own /dev (read through its init process's root) holds its group and the VFIO
    # container device only. `ctr task exec` lists the guest's /dev/vfio instead (see docs/pod-with-vf.md),
    # where the other group's node is present and refused by the container's device rules.
    assert seen["init_dev_vfio"] == sorted([group, "vfio"]), seen
    assert vfio.device_rules_only_for(seen, group), seen
    assert seen["open"] == "opened", seen
    assert seen["info"][pci]["vfio"] == {"mount": "/dev/vfio/vfio", "dev-mount": f"/dev/vfio/{group}"}, seen
    assert seen["status"]["device-info"]["pci"]["pci-address"] == pci, seen
    assert pods.vlan_of(seen["pf_entry"]) == vfio.VLAN, seen
    assert scenario["vfio_pod"]["checked"], scenario["vfio_pod"]
