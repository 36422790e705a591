"""configurationMode systemd on the simulated SR-IOV host: the pod writes the config, installs the units and
asks for a reboot; at "boot" the services (`sriovop config-daemon service --phase pre|post`, run the way the
units run them: the host's python3 with the packages the daemon copied to /var/lib/sriov) configure the
host; the pod then reports their result. The unit files are checked with `systemd-analyze verify`."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sriovop.api.v1 import consts
from sriovop.api.v1.supportednics import default_supported_nics
from sriovop.daemon.systemd_service import run_phase
from sriovop.host.paths import HostPaths
from sriovop.host.sysfs import link_basename
from sriovop.host.systemd_files import (
    CONFIG_REL,
    LIBDIR_REL,
    POST_UNIT,
    PRE_UNIT,
    RESULT_REL,
    SystemdFiles,
)
from sriovop.sim.host import SimHost
from test.support.daemon_harness import annotation, client_for, get_state, pf_spec, prepare_cluster, running_daemon
from test.support.operator_drain import running_drain_manager
from test.support.poll import wait_for

HOST_PYTHON = "/usr/bin/python3"
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


def run_service(root: Path, phase: str) -> subprocess.CompletedProcess[str]:
    """What the unit's ExecStart does (the launcher), with the simulated root: the host's python3 and only
    the packages the daemon installed under /var/lib/sriov/python, not this test's virtualenv."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(root / LIBDIR_REL)}
    return subprocess.run([HOST_PYTHON, "-m", "sriovop.cli", "config-daemon", "service", "--phase", phase,
                           "--host-root", str(root), "--simulated-host"], capture_output=True, text=True, env=env,
                          timeout=300, cwd="/")


def result(root: Path) -> dict:
    return dict(yaml.safe_load((root / RESULT_REL).read_text()))


def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    root = tmp_path / "host"
    files = SystemdFiles(HostPaths.at(root))
    assert files.install_units() is True
    files.install_launcher()
    assert files.install_units() is False  # unchanged: no reboot for the units
    # verify --root resolves every unit and the ExecStart binary under the root: give it the system's units.
    shutil.copytree(SYSTEM_UNITS, root / "usr/lib/systemd/system", symlinks=True)
    units = [f"/etc/systemd/system/{PRE_UNIT}", f"/etc/systemd/system/{POST_UNIT}"]
    proc = subprocess.run(["systemd-analyze", "verify", f"--root={root}", *units], capture_output=True, text=True,
                          timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert "sriov-config" not in proc.stderr, proc.stderr  # no warning about our units either
    pre = (root / "etc/systemd/system" / PRE_UNIT).read_text()
    post = (root / "etc/systemd/system" / POST_UNIT).read_text()
    assert "Before=NetworkManager.service systemd-networkd.service network.target kubelet.service" in pre
    assert "ExecStart=/var/lib/sriov/sriovop config-daemon service --phase pre" in pre
    assert "Before=kubelet.service" in post and "openvswitch-switch.service" in post
    assert "ExecStart=/var/lib/sriov/sriovop config-daemon service --phase post" in post
    assert os.readlink(root / "etc/systemd/system/multi-user.target.wants" / PRE_UNIT) == \
        f"/etc/systemd/system/{PRE_UNIT}"
    # A broken launcher is what verify catches.
    (root / "var/lib/sriov/sriovop").chmod(0o644)
    proc = subprocess.run(["systemd-analyze", "verify", f"--root={root}", units[0]], capture_output=True,
                          text=True, timeout=120, cwd="/")
    assert proc.returncode != 0 and "not executable" in proc.stderr


def test_post_phase_without_a_successful_pre_phase_fails(tmp_path: Path) -> None:
    with SimHost(tmp_path / "host", ["xxv710:1"]) as sim:
        files = SystemdFiles(HostPaths.at(sim.root))
        files.write_supported_nics(default_supported_nics())
        out = run_phase("post", sim.root, kernel=sim.access)
        assert out.sync_status == consts.SYNC_STATUS_FAILED
        assert out.last_sync_error == "post: unexpected result of the pre phase: missing, syncError: "
        assert result(sim.root) == {"syncStatus": "Failed", "lastSyncError": out.last_sync_error}


def test_systemd_mode_pod_supervises_services_configure_at_boot(kubeconfig: Path, namespace: str,
                                                                node_name: str, sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    pci = xxv["pciAddress"]
    spec = {"interfaces": [pf_spec(xxv, 4, mtu=9000)]}
    prepare_cluster(client, namespace, node_name, spec=spec)
    root = sim.root
    with running_drain_manager(kubeconfig, namespace):
        with running_daemon(kubeconfig, namespace, node_name, root, systemd_mode=True):
            def reboot_asked() -> dict | None:
                st = get_state(client, namespace, node_name)
                status = st.get("status") or {}
                err = status.get("lastSyncError") or ""
                return st if "reboot required" in err and "systemd mode" in err else None
            state = wait_for(reboot_asked, 60, "the reboot request for the systemd services")
            assert state["status"]["syncStatus"] == consts.SYNC_STATUS_IN_PROGRESS
            assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.REBOOT_REQUIRED
            # The pod only supervises: the host is untouched, the services' inputs are written.
            assert sim.kernel.pfs[pci].numvfs == 0
            config = yaml.safe_load((root / CONFIG_REL).read_text())
            assert config["spec"] == spec and config["platformType"] == "baremetal"
            assert config["unsupportedNics"] is False and config["manageSoftwareBridges"] is False
            assert "8086 158b 154c" in (root / "etc/sriov-operator/sriov-supported-nics-ids.yaml").read_text()
            assert (root / "etc/systemd/system" / PRE_UNIT).exists() and (root / "var/lib/sriov/sriovop").exists()
            assert not (root / RESULT_REL).exists()

        # The node reboots: kernel state gone, files kept; systemd runs the two phases in order.
        sim.reboot()
        pre = run_service(root, "pre")
        assert pre.returncode == 0, pre.stderr
        assert result(root) == {"syncStatus": "InProgress", "lastSyncError": ""}
        pf = sim.kernel.pfs[pci]
        assert pf.numvfs == 4 and all(not vf.driver for vf in pf.vfs.values())  # created, left unbound
        post = run_service(root, "post")
        assert post.returncode == 0, post.stderr
        assert result(root) == {"syncStatus": "Succeeded", "lastSyncError": ""}
        assert [link_basename(sim.kernel.dev_dir(vf.pci) / "driver") for vf in pf.vfs.values()] == ["iavf"] * 4

        # The pod after the reboot reports the services' result and asks for nothing more.
        with running_daemon(kubeconfig, namespace, node_name, root, systemd_mode=True):
            def reported() -> dict | None:
                st = get_state(client, namespace, node_name)
                status = st.get("status") or {}
                ifaces = status.get("interfaces") or []
                ok = status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and ifaces and \
                    ifaces[0].get("numVfs") == 4 and \
                    annotation(st, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
                return st if ok else None
            state = wait_for(reported, 60, "Succeeded from the services' result")
            assert not state["status"].get("lastSyncError")
            assert ifaces_mtu(state) == 9000

        # Back to daemon mode: the systemd mode's files are removed from the host.
        with running_daemon(kubeconfig, namespace, node_name, root):
            wait_for(lambda: not (root / CONFIG_REL).exists(), 60, "the systemd-mode files removed")
            assert not (root / "etc/systemd/system" / PRE_UNIT).exists()
            assert not (root / "etc/systemd/system/multi-user.target.wants" / POST_UNIT).is_symlink()
            assert not (root / "var/lib/sriov/sriovop").exists()


def ifaces_mtu(state: dict) -> int:
    return int(state["status"]["interfaces"][0]["mtu"])


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimHost]:
    """One simulated XXV710 port (the test's host)."""
    host = SimHost(tmp_path / "host", ["xxv710:1"]).start()
    try:
        yield host
    finally:
        host.stop()
