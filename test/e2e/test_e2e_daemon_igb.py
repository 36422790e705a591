"""The config daemon on a real kernel: a policy becomes igbvf VFs on QEMU's emulated Intel 82576.

One guest boot runs `sriovop config-daemon --host-root /` (the host venv over 9p) against the shared
control plane, reached through the guest's apiserver forward. On the host the operator's node-policy
and drain controllers run in-process, as the operator wires them. The scenario (module fixture):

1. the daemon reports the 82576 PF in the NodeState status;
2. a policy asks for 4 VFs, MTU 9000 on eth0 → the operator writes the NodeState spec → the daemon
   creates the VFs (igbvf), pins their admin MACs, reports `Succeeded` with every VF;
3. next to the running daemon, the guest's `ip` cross-checks the kernel, and tries what igb cannot do
   (VF link state, some VF rates): recorded as expected failures with the reason; traffic sent on VF 0
   shows in the daemon's per-VF metrics (igb's netlink VF stats are zero-filled);
4. the policy is deleted → the spec is empty → the PF is reset (through a real drain): numVfs 0, no VFs;
5. a policy asks for 8 VFs → the daemon reports `Failed` naming the PF and the totalvfs/ERANGE reason,
   keeps running and retrying, and leaves the PF untouched; fixed to 7 VFs (the 82576's maximum) it
   recovers; VFs removed behind its back (`sriov_numvfs` 0) are re-created at its next drift check;
6. SIGTERM: the daemon exits 0.

The tests assert on what the fixture recorded. No webhook runs here (the 8-VF policy reaches the daemon);
the webhook's own rejection of numVfs above totalvfs is covered by the webhook tests.
"""

from __future__ import annotations

import json
import os
import shlex
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_POLICY, SRIOV_NETWORK_NODE_STATE
from sriovop.devcluster import ControlPlane
from sriovop.host.vfmetrics import iter_series
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import NODE
from test.support.controllers_harness import node_policy_controller
from test.support.daemon_harness import client_for, prepare_cluster
from test.support.kube import create_namespace, delete_namespace
from test.support.operator_drain import running_drain_manager
from test.support.vm_daemon import EXIT_MARK, STARTED_LOG, GuestShell, daemon_script
from test.support.vm_guest import GuestFactory

# TCG guest: boot 10-50 s, `import kubernetes` 20-35 s, each daemon pass several seconds.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

NODE_NAME = "e2e-igb-node"
PF_PCI = "0000:01:00.0"
PF_NAME = "eth0"
NUM_VFS = 4
MTU = 9000
WORKER = {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux", "kubernetes.io/hostname": NODE_NAME}
POLICY = "igb-e2e"
RESOURCE = "igbvfs"
# VF offset 0x80, stride 2 behind 01:00.0 (hack/vm/README.md).
METRICS_PORT = 9110
VF_PCIS = ["0000:01:10.0", "0000:01:10.2", "0000:01:10.4", "0000:01:10.6"]

SYSFS_VFS = f"pf=/sys/bus/pci/devices/{PF_PCI}\n" + r"""
for l in "$pf"/virtfn*; do
  d=$(readlink -f "$l")
  printf '%s %s %s %s %s %s\n' "${l##*virtfn}" "${d##*/}" "$(cat "$d/vendor")" "$(cat "$d/device")" \
    "$(basename "$(readlink "$d/driver")")" "$(ls "$d/net" 2>/dev/null)"
done
cat "$pf/sriov_numvfs"
"""

# What igb cannot do (see test_vm_sysfs.py for the same facts on plain sysfs): tried on the daemon's VFs.
UNSUPPORTED = {
    "vf_link_state": (f"ip link set {PF_NAME} vf 0 state enable", "Operation not supported",
                      "igb has no ndo_set_vf_link_state"),
    "vf_min_tx_rate": (f"ip link set {PF_NAME} vf 1 min_tx_rate 10", "Invalid argument",
                       "igb_ndo_set_vf_bw rejects any minimum rate"),
    "vf_max_tx_rate_above_link": (f"ip link set {PF_NAME} vf 2 max_tx_rate 2000", "Invalid argument",
                                  "igb rejects a VF rate above the PF's 1000 Mb/s link"),
}


def _pf(state: dict[str, Any]) -> dict[str, Any] | None:
    for iface in (state.get("status") or {}).get("interfaces") or []:
        if iface.get("pciAddress") == PF_PCI:
            return dict(iface)
    return None


def _spec_pf(state: dict[str, Any]) -> dict[str, Any] | None:
    for iface in (state.get("spec") or {}).get("interfaces") or []:
        if iface.get("pciAddress") == PF_PCI:
            return dict(iface)
    return None


def _sync(state: dict[str, Any]) -> str:
    return str((state.get("status") or {}).get("syncStatus") or "")


class Follower:
    """Polls the NodeState: when the spec first matched, and when the status then did."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace

    def get(self) -> dict[str, Any] | None:
        try:
            return self.client.get(SRIOV_NETWORK_NODE_STATE, NODE_NAME, self.namespace)
        except NotFound:
            return None

    def until(self, what: str, spec_ok: Callable[[dict[str, Any]], bool],
              status_ok: Callable[[dict[str, Any]], bool], timeout: float,
              console: Callable[[], str]) -> tuple[float, float, dict[str, Any]]:
        """Returns (monotonic time the spec matched, time the status then matched, the NodeState)."""
        deadline = time.monotonic() + timeout
        t_spec: float | None = None
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            last = self.get()
            now = time.monotonic()
            if last is not None and spec_ok(last):
                t_spec = t_spec or now
                if status_ok(last):
                    return t_spec, now, last
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (spec matched: {t_spec is not None})"
                             f"\nlast NodeState: {json.dumps(last, indent=1)[-3000:]}"
                             f"\n--- guest console tail ---\n{console()[-5000:]}")


def _policy(num_vfs: int) -> dict[str, Any]:
    return {"metadata": {"name": POLICY}, "spec": {
        "resourceName": RESOURCE, "numVfs": num_vfs, "mtu": MTU, "priority": 10, "deviceType": "netdevice",
        "nicSelector": {"vendor": "8086", "deviceID": "10c9", "pfNames": [PF_NAME]},
        "nodeSelector": {"kubernetes.io/hostname": NODE_NAME}}}


def _ip_links(shell: GuestShell) -> list[dict[str, Any]]:
    rc, out, err = shell.run("ip -j link show")
    assert rc == 0, err
    links: list[dict[str, Any]] = json.loads(out)
    return links


def _sysfs_vfs(shell: GuestShell) -> dict[str, Any]:
    rc, out, err = shell.run(SYSFS_VFS)
    assert rc == 0, err
    lines = out.strip().splitlines()
    vfs = [dict(zip(("index", "pci", "vendor", "device", "driver", "netdev"), ln.split(), strict=False))
           for ln in lines[:-1] if not ln.startswith("*")]
    return {"numvfs": lines[-1].strip(), "vfs": vfs}


# VF 0's link, then frames sent from its netdev (AF_PACKET, local experimental ethertype 0x88b5) so its
# counters move. igbvf drops what is sent before its link is up (~0.5 s after `ip link set up`).
WAIT_LINK = r"""
import sys, time
net = f"/sys/class/net/{sys.argv[1]}"
deadline = time.monotonic() + float(sys.argv[2])
while open(f"{net}/operstate").read().strip() != "up":
    if time.monotonic() > deadline:
        sys.exit(f"{sys.argv[1]} link not up after {sys.argv[2]} s")
    time.sleep(0.2)
"""
SEND_FRAMES = r"""
import socket, sys, time
name = sys.argv[1]
net = f"/sys/class/net/{name}"
deadline = time.monotonic() + 20
mac = bytes.fromhex(open(f"{net}/address").read().strip().replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((name, 0))
for _ in range(5):
    s.send(b"\xff" * 6 + mac + b"\x88\xb5" + b"sriovop-e2e".ljust(60, b"."))
while int(open(f"{net}/statistics/tx_packets").read()) < 5:
    assert time.monotonic() < deadline, f"{name} never counted the frames"
    time.sleep(0.2)
"""
# igbvf's reset handshake with igb fails at random under QEMU's 82576 (in a guest experiment, 0 to 2 of 4
# rebinds failed with "PF still in reset state"; hack/vm/README.md says which step); such a VF keeps its
# link down. Reloading igbvf redoes the handshake.
LINK_ATTEMPTS = 6
LINK_WAIT_SECONDS = 15


def _vf_link_up(shell: GuestShell, vf_pci: str) -> dict[str, Any]:
    """Sets VF 0 up and waits for its link, reloading igbvf on it while the emulated handshake fails.
    Returns the netdev's name and the attempts it took (the record says how often the emulator failed)."""
    errors: list[str] = []
    for attempt in range(1, LINK_ATTEMPTS + 1):
        rc, out, err = shell.run(f"ls /sys/bus/pci/devices/{vf_pci}/net")
        assert rc == 0 and out.strip(), (vf_pci, err)
        name = out.split()[0]
        rc, _out, err = shell.run(f"ip link set {name} up && "
                                  f"python3 -c {shlex.quote(WAIT_LINK)} {name} {LINK_WAIT_SECONDS}")
        if rc == 0:
            return {"name": name, "attempts": attempt, "errors": errors}
        errors.append(err.strip())
        rc, _out, err = shell.run(f"echo {vf_pci} > /sys/bus/pci/drivers/igbvf/unbind && "
                                  f"echo {vf_pci} > /sys/bus/pci/drivers/igbvf/bind")
        assert rc == 0, err
    raise AssertionError(f"VF {vf_pci} had no link after {LINK_ATTEMPTS} attempts: {errors}")


def _traffic_and_metrics(shell: GuestShell, pf: dict[str, Any]) -> dict[str, Any]:
    """Traffic on VF 0, then one scrape of the daemon's /metrics between two reads of the VF netdev's
    own counters (the kernel's IPv6 autoconfiguration keeps sending a few packets of its own)."""
    link = _vf_link_up(shell, pf["Vfs"][0]["pciAddress"])
    vf0 = link["name"]
    rc, _out, err = shell.run(f"python3 -c {shlex.quote(SEND_FRAMES)} {vf0}")
    assert rc == 0, err
    stats = f"cat /sys/class/net/{vf0}/statistics/tx_packets /sys/class/net/{vf0}/statistics/tx_bytes"
    rc, out, err = shell.run(f"{stats}; echo '#---'; curl -sf http://127.0.0.1:{METRICS_PORT}/metrics; "
                             f"echo '#---'; {stats}; echo '#---'; ip -s -j link show {PF_NAME}")
    assert rc == 0, err
    before, metrics, after, pf_json = out.split("#---\n")
    (pf_link,) = json.loads(pf_json)
    return {"vf0": vf0, "link": link, "series": list(iter_series(metrics)),
            "before": [int(x) for x in before.split()], "after": [int(x) for x in after.split()],
            "netlink_vf0_stats": pf_link["vfinfo_list"][0].get("stats")}


@pytest.fixture(scope="module")
def scenario(cluster_guest: GuestFactory, control_plane: ControlPlane,
             vm_timings: dict[str, float]) -> Iterator[dict[str, Any]]:
    namespace = f"e2e-daemon-{uuid.uuid4().hex[:6]}"
    create_namespace(control_plane.kubeconfig, namespace)
    client = client_for(control_plane.kubeconfig)
    rec: dict[str, Any] = {"namespace": namespace}
    prepare_cluster(client, namespace, NODE_NAME, node_state=False)
    client.patch(NODE, NODE_NAME, {"metadata": {"labels": WORKER}})
    t0 = time.monotonic()
    with node_policy_controller(control_plane.kubeconfig, namespace, stale_delay_minutes=0), \
            running_drain_manager(control_plane.kubeconfig, namespace), \
            cluster_guest(node=NODE_NAME).start(daemon_script(namespace, extra_args=(
                "--metrics-bind-address", f"127.0.0.1:{METRICS_PORT}")), timeout=1400) as guest:
        shell = GuestShell(guest)
        follow = Follower(client, namespace)
        console = lambda: guest.console  # noqa: E731

        # 1. The daemon starts (import time on TCG) and reports the host.
        guest.wait_for(STARTED_LOG, timeout=400)
        assert guest.boot_seconds is not None and guest.ready_at is not None
        vm_timings["daemon_guest_boot_seconds"] = guest.boot_seconds
        vm_timings["daemon_start_seconds"] = time.monotonic() - guest.ready_at
        _t, t_disc, state = follow.until("the PF in the NodeState status", lambda s: True,
                                         lambda s: _pf(s) is not None and _sync(s) == consts.SYNC_STATUS_SUCCEEDED,
                                         300, console)
        vm_timings["daemon_first_status_seconds"] = t_disc - guest.ready_at
        rec["discovered"] = state

        # 2. Policy → spec → 4 VFs.
        t_policy = time.monotonic()
        client.create(SRIOV_NETWORK_NODE_POLICY, _policy(NUM_VFS), namespace)
        t_spec, t_done, state = follow.until(
            f"{NUM_VFS} VFs Succeeded",
            lambda s: (_spec_pf(s) or {}).get("numVfs") == NUM_VFS,
            lambda s: _sync(s) == consts.SYNC_STATUS_SUCCEEDED and (_pf(s) or {}).get("numVfs") == NUM_VFS,
            400, console)
        vm_timings["vf_create_spec_to_succeeded_seconds"] = t_done - t_spec
        vm_timings["vf_create_policy_to_succeeded_seconds"] = t_done - t_policy
        rec["configured"] = state

        # 3. The kernel's view, next to the running daemon, and what igb cannot do.
        rec["ip_links"] = _ip_links(shell)
        rec["sysfs"] = _sysfs_vfs(shell)
        rec["unsupported"] = {}
        for name, (cmd, _msg, _why) in UNSUPPORTED.items():
            rc, _out, err = shell.run(cmd)
            rec["unsupported"][name] = {"cmd": cmd, "rc": rc, "stderr": err}
        rec["ip_links_after_unsupported"] = _ip_links(shell)
        rec["metrics"] = _traffic_and_metrics(shell, _pf(state) or {})
        vm_timings["vf0_link_attempts"] = rec["metrics"]["link"]["attempts"]

        # 4. Policy deleted → empty spec → reset (the daemon asks for a drain first).
        client.delete(SRIOV_NETWORK_NODE_POLICY, POLICY, namespace)
        t_spec, t_done, state = follow.until(
            "the reset to 0 VFs",
            lambda s: _spec_pf(s) is None,
            lambda s: _sync(s) == consts.SYNC_STATUS_SUCCEEDED and _pf(s) is not None
            and not (_pf(s) or {}).get("numVfs") and not (_pf(s) or {}).get("Vfs"),
            400, console)
        vm_timings["vf_reset_spec_to_succeeded_seconds"] = t_done - t_spec
        rec["reset"] = state
        rec["reset_sysfs"] = _sysfs_vfs(shell)
        rec["reset_ip_links"] = _ip_links(shell)

        # 5. 8 VFs on a PF with sriov_totalvfs 7: Failed, and the daemon stays up.
        client.create(SRIOV_NETWORK_NODE_POLICY, _policy(8), namespace)
        t_spec, t_done, state = follow.until(
            "syncStatus Failed for 8 VFs",
            lambda s: (_spec_pf(s) or {}).get("numVfs") == 8,
            lambda s: _sync(s) == consts.SYNC_STATUS_FAILED, 300, console)
        vm_timings["eight_vfs_spec_to_failed_seconds"] = t_done - t_spec
        rec["failed"] = state
        failures_seen = guest.console.count("sync failed")
        retry = time.monotonic()
        while guest.console.count("sync failed") <= failures_seen and time.monotonic() - retry < 120:
            time.sleep(0.5)
        rec["failures_logged"] = (failures_seen, guest.console.count("sync failed"))
        rec["daemon_alive_after_failure"] = shell.daemon_alive()
        rec["failed_later"] = follow.get()
        rec["failed_sysfs"] = _sysfs_vfs(shell)

        # 5b. The retrying daemon recovers when the policy is fixed: the 82576's maximum, 7 VFs.
        client.patch(SRIOV_NETWORK_NODE_POLICY, POLICY, {"spec": {"numVfs": 7}}, namespace=namespace)
        t_spec, t_done, state = follow.until(
            "7 VFs Succeeded after the failure",
            lambda s: (_spec_pf(s) or {}).get("numVfs") == 7,
            lambda s: _sync(s) == consts.SYNC_STATUS_SUCCEEDED and (_pf(s) or {}).get("numVfs") == 7,
            400, console)
        vm_timings["vf_create_7_spec_to_succeeded_seconds"] = t_done - t_spec
        rec["recovered"] = state
        rec["recovered_sysfs"] = _sysfs_vfs(shell)

        # 5c. Drift: the VFs removed behind the daemon's back are re-created at its next check.
        seen = len(guest.console)
        rc, _out, err = shell.run(f"echo 0 > /sys/bus/pci/devices/{PF_PCI}/sriov_numvfs")
        assert rc == 0, err
        t_drift = time.monotonic()

        def reapplied(s: dict[str, Any]) -> bool:
            # The status still says Succeeded/7 from before until the re-apply writes InProgress, so
            # wait for the daemon's own "applied" line after its drift line.
            after = guest.console[seen:]
            drift = after.find("host drifted")
            return drift >= 0 and "configuration applied" in after[drift:] and \
                _sync(s) == consts.SYNC_STATUS_SUCCEEDED and (_pf(s) or {}).get("numVfs") == 7

        _t, t_done, state = follow.until("the drifted host re-configured", lambda s: True, reapplied, 300, console)
        vm_timings["drift_repair_seconds"] = t_done - t_drift
        rec["drift_repaired"] = state
        rec["drift_sysfs"] = _sysfs_vfs(shell)

        # 6. SIGTERM.
        rc, _console = guest.stop(timeout=120)
        rec["stop_rc"] = rc
        rec["output"] = guest.output
        if dump := os.environ.get("SRIOVOP_E2E_CONSOLE"):  # debugging: keep the guest console
            Path(dump).write_text(guest.console)
    vm_timings["daemon_e2e_total_seconds"] = time.monotonic() - t0
    yield rec
    delete_namespace(control_plane.kubeconfig, namespace)


# -- 1. discovery ------------------------------------------------------------------------------------


def test_daemon_discovers_the_82576_pf(scenario: dict[str, Any]) -> None:
    pf = _pf(scenario["discovered"])
    assert pf is not None
    assert (pf["name"], pf["vendor"], pf["deviceID"], pf["driver"], pf["totalvfs"]) == \
        (PF_NAME, "8086", "10c9", "igb", 7)
    assert pf.get("numVfs", 0) == 0 and "Vfs" not in pf
    assert pf["linkType"] == "ETH"


# -- 2. four VFs -------------------------------------------------------------------------------------


def test_policy_becomes_nodestate_spec(scenario: dict[str, Any]) -> None:
    spec = _spec_pf(scenario["configured"])
    assert spec is not None
    assert (spec["numVfs"], spec["mtu"], spec["name"]) == (NUM_VFS, MTU, PF_NAME)
    assert [(g["resourceName"], g["vfRange"], g["deviceType"]) for g in spec["vfGroups"]] == \
        [(RESOURCE, f"0-{NUM_VFS - 1}", "netdevice")]


def test_four_igbvf_vfs_reported_succeeded(scenario: dict[str, Any]) -> None:
    state = scenario["configured"]
    assert _sync(state) == consts.SYNC_STATUS_SUCCEEDED
    assert not state["status"].get("lastSyncError")
    pf = _pf(state)
    assert pf is not None
    assert (pf["numVfs"], pf["mtu"], pf["totalvfs"], pf["linkAdminState"]) == (NUM_VFS, MTU, 7, "up")
    vfs = pf["Vfs"]
    assert [v["vfID"] for v in vfs] == list(range(NUM_VFS))
    assert [v["pciAddress"] for v in vfs] == VF_PCIS
    for vf in vfs:
        assert (vf["vendor"], vf["deviceID"], vf["driver"], vf["mtu"]) == ("8086", "10ca", "igbvf", MTU), vf
        assert vf["name"] and vf["mac"] and vf["mac"] != "00:00:00:00:00:00", vf
    assert len({v["mac"] for v in vfs}) == NUM_VFS


def test_status_matches_the_guest_kernel(scenario: dict[str, Any]) -> None:
    """The daemon's report against `ip -j link show` and sysfs, read in the guest while it ran."""
    pf = _pf(scenario["configured"])
    assert pf is not None
    links = {link["ifname"]: link for link in scenario["ip_links"]}
    pf_link = links[PF_NAME]
    assert pf_link["mtu"] == MTU and "UP" in pf_link["flags"]
    assert pf_link["address"] == pf["mac"]
    # The admin MAC pinned on the PF for each VF is the MAC the status reports, and the VF netdev's.
    admin = {v["vf"]: v["address"] for v in pf_link["vfinfo_list"]}
    assert sorted(admin) == list(range(NUM_VFS))
    for vf in pf["Vfs"]:
        assert admin[vf["vfID"]] == vf["mac"], (vf, admin)
        assert links[vf["name"]]["address"] == vf["mac"]
        assert links[vf["name"]]["mtu"] == vf["mtu"] == MTU
    sysfs = scenario["sysfs"]
    assert sysfs["numvfs"] == str(NUM_VFS)
    assert [(s["pci"], s["vendor"], s["device"], s["driver"], s["netdev"]) for s in sysfs["vfs"]] == \
        [(v["pciAddress"], "0x8086", "0x10ca", "igbvf", v["name"]) for v in pf["Vfs"]]


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_expected_failure_igb_vf_setting(scenario: dict[str, Any], name: str) -> None:
    """Expected failures of the igb emulation/driver, on the VFs the daemon created (reason in
    UNSUPPORTED): the kernel refuses them, and a refused setting changes nothing."""
    cmd, message, why = UNSUPPORTED[name]
    result = scenario["unsupported"][name]
    assert result["rc"] != 0, f"igb unexpectedly accepted `{cmd}` ({why}): {result}"
    assert message in result["stderr"], (why, result)
    before = {link["ifname"]: link for link in scenario["ip_links"]}[PF_NAME]["vfinfo_list"]
    after = {link["ifname"]: link for link in scenario["ip_links_after_unsupported"]}[PF_NAME]["vfinfo_list"]
    assert [(v["vf"], v.get("rate"), v.get("link_state")) for v in after] == \
        [(v["vf"], v.get("rate"), v.get("link_state")) for v in before]


def test_vf_metrics_count_traffic_on_the_real_vf(scenario: dict[str, Any]) -> None:
    """Per-VF counters from the daemon's /metrics, on a PF driver whose netlink VF stats are zero-filled."""
    m = scenario["metrics"]
    pf = _pf(scenario["configured"])
    assert pf is not None
    assert m["before"][0] >= 5, "the frames sent on VF 0 show in its netdev counters"
    # igb has no ndo_get_vf_stats: the kernel reports IFLA_VF_STATS as zeros whatever the traffic.
    assert m["netlink_vf0_stats"]["tx"]["tx_packets"] == 0, m["netlink_vf0_stats"]
    series = {(name, labels["vf"]): (labels, value) for name, labels, value in m["series"]
              if name.startswith("sriov_vf_")}
    for vf in pf["Vfs"]:
        labels, _value = series[("sriov_vf_tx_packets", str(vf["vfID"]))]
        assert labels == {"pf": PF_NAME, "vf": str(vf["vfID"]), "pciAddr": vf["pciAddress"], "node": NODE_NAME}
    assert m["before"][0] <= series[("sriov_vf_tx_packets", "0")][1] <= m["after"][0], m
    assert m["before"][1] <= series[("sriov_vf_tx_bytes", "0")][1] <= m["after"][1], m


# -- 4. reset ----------------------------------------------------------------------------------------


def test_policy_removed_resets_the_pf(scenario: dict[str, Any]) -> None:
    state = scenario["reset"]
    assert (state.get("spec") or {}).get("interfaces") in (None, [])
    pf = _pf(state)
    assert pf is not None
    assert pf.get("numVfs", 0) == 0 and "Vfs" not in pf
    assert pf["mtu"] == 1500, "the MTU of the initial-state checkpoint is restored"
    assert scenario["reset_sysfs"] == {"numvfs": "0", "vfs": []}
    pf_link = {link["ifname"]: link for link in scenario["reset_ip_links"]}[PF_NAME]
    assert not pf_link.get("vfinfo_list")
    assert pf_link["mtu"] == 1500


# -- 5. too many VFs ---------------------------------------------------------------------------------


def test_eight_vfs_reported_failed_naming_pf_and_reason(scenario: dict[str, Any]) -> None:
    state = scenario["failed"]
    assert _sync(state) == consts.SYNC_STATUS_FAILED
    error = state["status"]["lastSyncError"]
    assert PF_PCI in error and "check-totalvfs" in error, error
    # The daemon checks sriov_totalvfs itself before writing sriov_numvfs (upstream's order) and
    # reports it as the kernel would have refused it: ERANGE.
    assert "numVfs 8 is above sriov_totalvfs 7 (ERANGE)" in error and "[Errno" not in error, error


def test_daemon_survives_and_retries_the_failure(scenario: dict[str, Any]) -> None:
    before, after = scenario["failures_logged"]
    assert after > before >= 1, "the failed apply is retried with backoff"
    assert scenario["daemon_alive_after_failure"]
    later = scenario["failed_later"]
    assert _sync(later) == consts.SYNC_STATUS_FAILED
    assert scenario["failed_sysfs"] == {"numvfs": "0", "vfs": []}, "a rejected apply leaves the PF as it was"


def test_daemon_recovers_with_seven_vfs(scenario: dict[str, Any]) -> None:
    state = scenario["recovered"]
    assert not state["status"].get("lastSyncError")
    pf = _pf(state)
    assert pf is not None
    assert [(v["pciAddress"], v["driver"], v["deviceID"], v["mtu"]) for v in pf["Vfs"]] == \
        [(f"0000:01:{0x10 + i // 4:02x}.{(2 * i) % 8}", "igbvf", "10ca", MTU) for i in range(7)]
    assert scenario["recovered_sysfs"]["numvfs"] == "7"
    assert [v["pci"] for v in scenario["recovered_sysfs"]["vfs"]] == [v["pciAddress"] for v in pf["Vfs"]]


def test_daemon_repairs_vfs_removed_behind_its_back(scenario: dict[str, Any]) -> None:
    pf = _pf(scenario["drift_repaired"])
    assert pf is not None and len(pf["Vfs"]) == 7
    assert {(v["driver"], v["mtu"]) for v in pf["Vfs"]} == {("igbvf", MTU)}
    assert scenario["drift_sysfs"]["numvfs"] == "7"
    assert {v["driver"] for v in scenario["drift_sysfs"]["vfs"]} == {"igbvf"}


# -- 6. stop -----------------------------------------------------------------------------------------


def test_daemon_exits_zero_on_sigterm(scenario: dict[str, Any]) -> None:
    assert f"{EXIT_MARK} 0" in scenario["output"], scenario["output"][-3000:]
    assert scenario["stop_rc"] == 0
