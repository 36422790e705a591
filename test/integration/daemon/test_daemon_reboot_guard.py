"""Kernel arguments through reboots, RDMA mode and modules on the simulated SR-IOV host, with the daemon against
a real API server:
the daemon writes the boot configuration, the simulator's boot loader reads it at `sim.reboot()`; a
broken boot loader ends in `Failed` after `reboot_limit` reboots, with the drain request withdrawn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.daemon.rebootguard import FILE_NAME
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import EVENT
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    annotation,
    client_for,
    get_state,
    pf_spec,
    prepare_cluster,
    running_daemon,
    set_current,
    wait_sync,
)
from test.support.poll import wait_for

IOMMU = ["intel_iommu=on", "iommu=pt"]
VFIO = [{"resourceName": "dpdk", "deviceType": "vfio-pci", "vfRange": "0-1"}]


def _reboot_reported(client: Client, namespace: str, node: str, count: int) -> dict[str, Any]:
    """Waits for the daemon to reach its reboot point for the `count`-th time (drain granted first)."""
    wait_for(lambda: annotation(get_state(client, namespace, node), consts.NODE_STATE_DRAIN_ANNOTATION)
             == consts.REBOOT_REQUIRED, 120, "Reboot_Required requested")
    set_current(client, namespace, node, consts.DRAIN_COMPLETE)

    def reported() -> dict[str, Any] | None:
        st = get_state(client, namespace, node)["status"]
        return st if f"reboot {count} of at most" in (st.get("lastSyncError") or "") else None
    return wait_for(reported, 120, f"reboot {count} reported")  # type: ignore[no-any-return]


def _events(client: Client, namespace: str, reason: str) -> int:
    return sum(int(e.get("count") or 1) for e in client.list(EVENT, namespace) if e["reason"] == reason)


def test_vfio_kernel_args_written_by_the_daemon_reach_cmdline_after_one_reboot(
        kubeconfig: Path, namespace: str, node_name: str, tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with SimHost(tmp_path / "host", ["xxv710:1"]) as sim:  # BLS boot entry, no IOMMU arguments
        xxv = sim.describe()["pfs"][0]
        prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2, groups=VFIO)]})
        with running_daemon(kubeconfig, namespace, node_name, sim.root):
            status = _reboot_reported(client, namespace, node_name, 1)
            assert "kernel arguments missing from /proc/cmdline: intel_iommu=on iommu=pt" in status["lastSyncError"]
            (entry,) = (sim.root / "boot/loader/entries").glob("*.conf")
            assert "intel_iommu=on iommu=pt" in entry.read_text()
            sim.reboot()  # no arguments given: only what the daemon wrote reaches the new kernel
            assert set(IOMMU) <= set((sim.root / "proc/cmdline").read_text().split())
            state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            assert [v["driver"] for v in state["status"]["interfaces"][0]["Vfs"]] == ["vfio-pci"] * 2
            assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
            assert (sim.root / "sys/module/vfio_pci").is_dir()
            wait_for(lambda: not (sim.root / "etc/sriov-operator/daemon" / FILE_NAME).exists(), 60,
                     "the reboot guard cleared")


def test_broken_boot_loader_fails_after_the_reboot_limit_and_never_loops(
        kubeconfig: Path, namespace: str, node_name: str, tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with SimHost(tmp_path / "host", ["xxv710:1"], boot_loader="broken") as sim:
        xxv = sim.describe()["pfs"][0]
        prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2, groups=VFIO)]})
        with running_daemon(kubeconfig, namespace, node_name, sim.root, reboot_limit=2):
            for count in (1, 2):
                _reboot_reported(client, namespace, node_name, count)
                boots = sim.boots
                sim.reboot()
                assert sim.boots == boots + 1
            state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_FAILED)
            error = state["status"]["lastSyncError"]
            assert "after 2 reboots" in error and "intel_iommu=on iommu=pt" in error, error
            assert "not rebooting again" in error
            assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE, \
                "the drain request is withdrawn, so the drain controller uncordons the node"
            # It keeps retrying (backoff) and keeps refusing: no new reboot request, no new count.
            wait_for(lambda: _events(client, namespace, "RebootLoopPrevented") >= 3, 180, "three refused passes")
            later = get_state(client, namespace, node_name)
            assert later["status"]["syncStatus"] == consts.SYNC_STATUS_FAILED
            assert annotation(later, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
            guard = json.loads((sim.root / "etc/sriov-operator/daemon" / FILE_NAME).read_text())
            assert guard["reboots"] == 2
            assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 0, "nothing applied without the IOMMU"

            # The administrator repairs the boot loader and reboots: the next pass succeeds.
            sim.boot_loader = "bls"
            sim.reboot()
            state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            assert [v["driver"] for v in state["status"]["interfaces"][0]["Vfs"]] == ["vfio-pci"] * 2


def test_rdma_mode_applied_without_a_reboot_and_reported(kubeconfig: Path, namespace: str, node_name: str,
                                                         tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with SimHost(tmp_path / "host", ["cx6dx:1"], modules=["ib_core"]) as sim:
        mlx = sim.describe()["pfs"][0]
        prepare_cluster(client, namespace, node_name,
                        spec={"interfaces": [pf_spec(mlx, 2)], "system": {"rdmaMode": "exclusive"}})
        with running_daemon(kubeconfig, namespace, node_name, sim.root, disable_plugins=("mellanox",)):
            state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            assert state["status"]["system"] == {"rdmaMode": "exclusive"}
            assert sim.kernel.system.rdma_mode == "exclusive"
            assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE, "no reboot asked"
            conf = sim.root / "etc/modprobe.d/sriov_network_operator_modules_config.conf"
            assert conf.read_text().endswith("options ib_core netns_mode=0\n")
            # Set back behind the daemon's back: its drift check sets it again and the status follows.
            sim.kernel.system.rdma_set("shared")
            wait_for(lambda: sim.kernel.system.rdma_mode == "exclusive", 120, "the mode set again")
            wait_for(lambda: get_state(client, namespace, node_name)["status"].get("system")
                     == {"rdmaMode": "exclusive"}, 120, "status.system.rdmaMode")


def test_missing_vhost_net_module_is_reported_as_an_event(kubeconfig: Path, namespace: str, node_name: str,
                                                          tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    with SimHost(tmp_path / "host", ["xxv710:1"], unavailable_modules=["vhost_net"]) as sim:
        prepare_cluster(client, namespace, node_name, spec={"interfaces": []})
        with running_daemon(kubeconfig, namespace, node_name, sim.root):
            wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            events = wait_for(lambda: [e for e in client.list(EVENT, namespace)
                                       if e["reason"] == "KernelModuleMissing"], 120, "the module event")
            assert events[0]["type"] == "Warning"
            assert "vhost_net: kernel module vhost_net cannot be loaded" in events[0]["message"]
            assert (sim.root / "sys/module/tun").is_dir(), "tun loaded"
