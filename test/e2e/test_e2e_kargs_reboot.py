"""Kernel arguments through real reboots of the QEMU guest (a real kernel, QEMU's intel-iommu, igb VFs).

The guest keeps /boot and /etc/sriov-operator across boots (test/support/vm_boot.py): the config daemon
edits the BLS entry there and "reboots" (its --reboot-command powers the guest off), and the harness boots
again with the command line that entry yields, as a boot loader would, or, playing a broken boot loader,
with the old one. The IOMMU hardware is always there; the node's command line starts with
`intel_iommu=off`, so the IOMMU is really off (no IOMMU groups) until the `intel_iommu=on` the daemon
appends, and vfio-pci really needs the reboot.
On the host the operator's node-policy and drain controllers run. A SriovNetworkPoolConfig asks for
rdmaMode exclusive; `ib_core` is loaded in the guest before the daemon starts. With --reboot-limit 1:

1. boot 1: a vfio-pci policy → Reboot_Required → drained (cordoned) → the daemon writes
   `intel_iommu=on iommu=pt ib_core.netns_mode=0` into the boot entry and reboots;
2. boot 2, broken boot loader (old command line): the arguments are still missing after 1 reboot →
   `Failed` naming them, the drain request withdrawn so the node is uncordoned, and no further reboot
   while the daemon keeps retrying; the RDMA mode was still set on the running kernel (`rdma system`);
3. boot 3, the boot loader repaired: `intel_iommu=on` in /proc/cmdline → the daemon loads vfio_pci,
   binds the VFs to vfio-pci, `Succeeded`; ib_core came up exclusive from the command line.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE, SRIOV_NETWORK_POOL_CONFIG
from sriovop.devcluster import ControlPlane
from sriovop.host.kernelio import parse_rdma_system
from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import EVENT, NODE
from test.support.controllers_harness import node_policy_controller
from test.support.daemon_harness import client_for, prepare_cluster
from test.support.kube import create_namespace, delete_namespace
from test.support.operator_drain import running_drain_manager
from test.support.vm_boot import REBOOT_COMMAND, REBOOT_MARK, GuestBootDisk
from test.support.vm_daemon import STARTED_LOG, GuestShell, daemon_script
from test.support.vm_guest import GuestFactory, RunningGuest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

NODE_NAME = "e2e-kargs-node"
OTHER_NODE = "e2e-kargs-other-node"
PF_PCI = "0000:01:00.0"
VF_PCIS = ["0000:01:10.0", "0000:01:10.2"]
WORKER = {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux", "kubernetes.io/hostname": NODE_NAME}
IOMMU = ["intel_iommu=on", "iommu=pt"]
RDMA_EXCLUSIVE = "ib_core.netns_mode=0"
GUEST_FACTS = r"""
echo "CMDLINE $(cat /proc/cmdline)"
echo "RDMA $(rdma system show)"
echo "VFIO_MODULE $([ -d /sys/module/vfio_pci ] && echo loaded || echo absent)"
echo "IOMMU_GROUPS $(ls /sys/kernel/iommu_groups | wc -l)"
for vf in /sys/bus/pci/devices/0000:01:00.0/virtfn*; do
  [ -e "$vf" ] || continue
  d=$(readlink -f "$vf")
  g=$(basename "$(readlink "$d/iommu_group" 2>/dev/null)" 2>/dev/null)
  dev=no; [ -n "$g" ] && [ -c "/dev/vfio/$g" ] && dev=yes
  echo "VF ${d##*/} $(basename "$(readlink "$d/driver")") group=${g:-none} dev=$dev"
done
"""


def parse_facts(out: str) -> dict[str, Any]:
    """GUEST_FACTS' output (the first block of each kind, when the console holds more)."""
    lines = [ln.strip() for ln in out.splitlines()]
    cmdline = next(ln for ln in lines if ln.startswith("CMDLINE ")).split()[1:]
    rdma = parse_rdma_system(next(ln for ln in lines if ln.startswith("RDMA ")))
    module = next(ln for ln in lines if ln.startswith("VFIO_MODULE ")).split()[-1]
    groups = int(next(ln for ln in lines if ln.startswith("IOMMU_GROUPS ")).split()[-1])
    return {"cmdline": cmdline, "rdma": rdma, "vfio_module": module, "iommu_groups": groups,
            "vfs": [ln.split()[1:] for ln in lines if ln.startswith("VF ")]}


def _sync(state: dict[str, Any] | None) -> str:
    return str(((state or {}).get("status") or {}).get("syncStatus") or "")


def _ann(state: dict[str, Any] | None, key: str) -> str:
    return str(((state or {}).get("metadata") or {}).get("annotations", {}).get(key) or "")


class Scenario:
    def __init__(self, client: Client, namespace: str, make: GuestFactory, disk: GuestBootDisk) -> None:
        self.client, self.namespace, self.make, self.disk = client, namespace, make, disk
        self.rec: dict[str, Any] = {}

    def state(self) -> dict[str, Any] | None:
        try:
            return self.client.get(SRIOV_NETWORK_NODE_STATE, NODE_NAME, self.namespace)
        except NotFound:
            return None

    def until(self, what: str, ok: Callable[[dict[str, Any] | None], bool], guest: RunningGuest,
              timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if ok(state):
                return state
            time.sleep(0.3)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}\nlast NodeState: "
                             f"{json.dumps(self.state(), indent=1)[-3000:]}\n--- guest console ---\n"
                             f"{guest.console[-5000:]}")

    def boot(self, *, broken: bool = False) -> RunningGuest:
        # The facts before the daemon starts go to the console: the first boot may be gone before a
        # shell request next to the daemon would be answered.
        before = f"modprobe ib_core\n{GUEST_FACTS}"
        script = daemon_script(self.namespace, reboot=True, before=before,
                               extra_args=("--reboot-limit", "1", "--reboot-command", REBOOT_COMMAND))
        vm = self.make(node=NODE_NAME, iommu=True, persist=self.disk.path, cmdline=self.disk.cmdline(broken=broken))
        guest = vm.start(script, timeout=900)
        guest.wait_for(STARTED_LOG, timeout=400)
        return guest

    def facts(self, guest: RunningGuest) -> dict[str, Any]:
        rc, out, err = GuestShell(guest).run(GUEST_FACTS)
        assert rc == 0, err
        return parse_facts(out)

    def loop_refusals(self) -> int:
        return sum(int(e.get("count") or 1) for e in self.client.list(EVENT, self.namespace)
                   if e["reason"] == "RebootLoopPrevented")

    def node_unschedulable(self) -> bool:
        return bool(self.client.get(NODE, NODE_NAME).get("spec", {}).get("unschedulable"))

    def run(self) -> None:
        rec = self.rec
        policy = {"metadata": {"name": "vfio-e2e"}, "spec": {
            "resourceName": "igbvfio", "numVfs": 2, "priority": 10, "deviceType": "vfio-pci",
            "nicSelector": {"vendor": "8086", "deviceID": "10c9", "pfNames": ["eth0"]},
            "nodeSelector": {"kubernetes.io/hostname": NODE_NAME}}}
        pool = {"metadata": {"name": "rdma-exclusive"}, "spec": {
            "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": NODE_NAME}}, "rdmaMode": "exclusive"}}
        self.client.create(SRIOV_NETWORK_POOL_CONFIG, pool, self.namespace)
        self.client.create(SRIOV_NETWORK_NODE_POLICY, policy, self.namespace)

        # 1. First boot: the daemon asks for the reboot, is drained, edits the boot entry, reboots.
        t0 = time.monotonic()
        guest = self.boot()
        guest.wait_for(REBOOT_MARK, timeout=400)
        rec["boot1_facts"] = parse_facts(guest.output)
        rec["boot1_state"] = self.state()
        rec["boot1_cordoned"] = self.node_unschedulable()
        rec["boot1_entry"] = self.disk.options().split()
        guest.wait(120)
        rec["boot1_seconds"] = time.monotonic() - t0

        # 2. Broken boot loader: the old command line again.
        guest = self.boot(broken=True)
        try:
            state = self.until("Failed after 1 reboot", lambda s: _sync(s) == consts.SYNC_STATUS_FAILED
                               and "after 1 reboot" in s["status"].get("lastSyncError", ""), guest, 300)
            rec["boot2_failed"] = state
            refusals = self.loop_refusals()
            deadline = time.monotonic() + 240
            while self.loop_refusals() < refusals + 2 and time.monotonic() < deadline:
                time.sleep(0.5)  # two more passes refused (the daemon retries with backoff)
            rec["boot2_refusals"] = (refusals, self.loop_refusals())
            uncordon_deadline = time.monotonic() + 120
            while self.node_unschedulable() and time.monotonic() < uncordon_deadline:
                time.sleep(0.5)
            rec["boot2_cordoned"] = self.node_unschedulable()
            rec["boot2_later"] = self.state()
            rec["boot2_facts"] = self.facts(guest)
            rec["boot2_rebooted"] = REBOOT_MARK in guest.console
            rec["boot2_guard"] = json.loads((self.disk.path / "state/daemon/reboot-guard.json").read_text())
        finally:
            guest.stop(timeout=120)

        # 3. The boot loader repaired: the entry's command line.
        guest = self.boot()
        try:
            rec["boot3_state"] = self.until(
                "Succeeded with vfio-pci VFs", lambda s: _sync(s) == consts.SYNC_STATUS_SUCCEEDED and any(
                    i.get("pciAddress") == PF_PCI and i.get("numVfs") == 2 for i in s["status"]["interfaces"]),
                guest, 400)
            rec["boot3_facts"] = self.facts(guest)
            rec["boot3_rebooted"] = REBOOT_MARK in guest.console
        finally:
            guest.stop(timeout=120)
        rec["total_seconds"] = time.monotonic() - t0


@pytest.fixture(scope="module")
def scenario(cluster_guest: GuestFactory, control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory,
             vm_timings: dict[str, float]) -> Iterator[dict[str, Any]]:
    namespace = f"e2e-kargs-{uuid.uuid4().hex[:6]}"
    create_namespace(control_plane.kubeconfig, namespace)
    client = client_for(control_plane.kubeconfig)
    prepare_cluster(client, namespace, NODE_NAME, node_state=False)
    client.patch(NODE, NODE_NAME, {"metadata": {"labels": WORKER}})
    # A second node: on a single-node cluster the drain controller neither cordons nor evicts before a
    # reboot (upstream), and this scenario shows the cordon and the uncordon.
    other = {"metadata": {"name": OTHER_NODE, "labels": {"kubernetes.io/hostname": OTHER_NODE}}}
    try:
        client.create(NODE, other)
    except Conflict:
        pass
    # Debian's kernel turns the Intel IOMMU on by default (INTEL_IOMMU_DEFAULT_ON_INTGPU_OFF); this node's
    # command line turns it off, as an administrator or a vendor image may. The daemon's intel_iommu=on
    # comes later on the line, and the kernel takes the last one.
    disk = GuestBootDisk(Path(tmp_path_factory.mktemp("kargs-disk")), hostname=NODE_NAME, extra="intel_iommu=off")
    run = Scenario(client, namespace, cluster_guest, disk)
    try:
        with node_policy_controller(control_plane.kubeconfig, namespace, stale_delay_minutes=0), \
                running_drain_manager(control_plane.kubeconfig, namespace):
            run.run()
    finally:
        client.delete(NODE, OTHER_NODE)
    vm_timings["kargs_three_boots_seconds"] = run.rec["total_seconds"]
    yield run.rec
    delete_namespace(control_plane.kubeconfig, namespace)


def test_first_boot_asks_for_the_reboot_and_writes_the_boot_entry(scenario: dict[str, Any]) -> None:
    facts = scenario["boot1_facts"]
    assert not set(IOMMU) & set(facts["cmdline"]), "the IOMMU is off on the first boot"
    assert facts["iommu_groups"] == 0, "no IOMMU groups: vfio-pci could not work on this boot"
    state = scenario["boot1_state"]
    assert _ann(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.REBOOT_REQUIRED
    assert "kernel arguments missing from /proc/cmdline: intel_iommu=on iommu=pt" in \
        state["status"]["lastSyncError"]
    assert "reboot 1 of at most 1" in state["status"]["lastSyncError"]
    assert scenario["boot1_cordoned"], "the reboot came through the drain handshake (node cordoned)"
    entry = scenario["boot1_entry"]
    assert set(IOMMU) <= set(entry) and RDMA_EXCLUSIVE in entry, entry
    assert entry[0] == "console=ttyS0" and "intel_iommu=off" in entry, "the rest of the entry is kept"
    assert entry.index("intel_iommu=on") > entry.index("intel_iommu=off"), "appended: the kernel takes the last"


def test_broken_boot_loader_fails_after_one_reboot_uncordons_and_does_not_loop(scenario: dict[str, Any]) -> None:
    assert not set(IOMMU) & set(scenario["boot2_facts"]["cmdline"])
    error = scenario["boot2_failed"]["status"]["lastSyncError"]
    assert "intel_iommu=on iommu=pt" in error and "not rebooting again" in error, error
    before, after = scenario["boot2_refusals"]
    assert after >= before + 2, "the daemon kept retrying and kept refusing to reboot"
    assert not scenario["boot2_rebooted"], "no reboot from the second boot"
    assert scenario["boot2_guard"]["reboots"] == 1
    later = scenario["boot2_later"]
    assert _sync(later) == consts.SYNC_STATUS_FAILED
    assert _ann(later, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
    assert not scenario["boot2_cordoned"], "the node is uncordoned"


def test_rdma_mode_set_on_the_running_kernel_without_the_argument(scenario: dict[str, Any]) -> None:
    facts = scenario["boot2_facts"]
    assert RDMA_EXCLUSIVE not in facts["cmdline"]
    assert facts["rdma"] == "exclusive", "the daemon ran `rdma system set netns exclusive` (the default is shared)"


def test_repaired_boot_loader_boots_with_the_arguments_and_vfio_pci_succeeds(scenario: dict[str, Any]) -> None:
    facts = scenario["boot3_facts"]
    assert set(IOMMU) <= set(facts["cmdline"]) and RDMA_EXCLUSIVE in facts["cmdline"], facts["cmdline"]
    assert facts["vfio_module"] == "loaded"
    assert facts["iommu_groups"] > 0
    assert [vf[0] for vf in facts["vfs"]] == VF_PCIS
    for vf in facts["vfs"]:
        assert vf[1] == "vfio-pci" and vf[2] != "group=none" and vf[3] == "dev=yes", vf
    assert facts["rdma"] == "exclusive", "ib_core came up exclusive from ib_core.netns_mode=0"
    state = scenario["boot3_state"]
    pf = next(i for i in state["status"]["interfaces"] if i["pciAddress"] == PF_PCI)
    assert [(v["pciAddress"], v["driver"]) for v in pf["Vfs"]] == [(p, "vfio-pci") for p in VF_PCIS]
    assert state["status"].get("system") == {"rdmaMode": "exclusive"}
    assert not state["status"].get("lastSyncError")
    assert not scenario["boot3_rebooted"]
