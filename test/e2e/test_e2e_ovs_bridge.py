"""Managed OVS bridges on a real kernel: Open vSwitch from Debian (ovsdb-server and ovs-vswitchd with the
guest kernel's openvswitch module) in the QEMU e2e guest, and the config daemon with
`--manage-software-bridges` next to it.

One guest boot. The NodeState spec is written directly (the operator only renders bridges for switchdev
policies, which QEMU's 82576 cannot do; the daemon applies `spec.bridges` whatever the PF's mode):
1. spec: the 82576 PF with 2 VFs, and bridge `br-0000_01_00.0` with the PF as uplink (interface options,
   external_ids, mtu_request) → `Succeeded` with `status.bridges` (a bridge change drains: the real drain
   controller answers);
2. checked with `ovs-vsctl` and `ip` in the guest, outside the daemon: the port, the interface columns,
   the bridge's external_ids, and the datapath ovs-vswitchd built in the kernel (eth0 enslaved to
   ovs-system, the bridge's internal port a netdev of kind openvswitch);
3. `spec.bridges` removed → `Succeeded` without `status.bridges`; the bridge is gone from OVSDB and eth0 has
   no master any more.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.devcluster import ControlPlane
from sriovop.runtime.errors import NotFound
from test.support.daemon_harness import client_for, prepare_cluster
from test.support.kube import create_namespace, delete_namespace
from test.support.operator_drain import running_drain_manager
from test.support.vm_daemon import STARTED_LOG, GuestShell, daemon_script
from test.support.vm_guest import GuestFactory

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

NODE_NAME = "e2e-ovs-node"
PF_PCI = "0000:01:00.0"
PF_NAME = "eth0"
BRIDGE = "br-" + PF_PCI.replace(":", "_")

# Open vSwitch in the guest: the database in the guest's fresh /run, then vswitchd (needs the module).
START_OVS = """\
set -e
modprobe openvswitch
mkdir -p /run/openvswitch /var/log/openvswitch
ovsdb-tool create /run/openvswitch/conf.db /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server /run/openvswitch/conf.db --remote=punix:/run/openvswitch/db.sock \\
  --remote=db:Open_vSwitch,Open_vSwitch,manager_options --pidfile=/run/openvswitch/ovsdb-server.pid \\
  --detach --log-file=/var/log/openvswitch/ovsdb-server.log
ovs-vsctl --no-wait init
ovs-vswitchd unix:/run/openvswitch/db.sock --pidfile=/run/openvswitch/ovs-vswitchd.pid --detach \\
  --log-file=/var/log/openvswitch/ovs-vswitchd.log
echo "E2E-OVS-STARTED $(ovs-vsctl --version | head -1)"
set +e
"""


def _bridge_spec() -> dict[str, Any]:
    return {"name": BRIDGE, "bridge": {"externalIDs": {"owner": "sriovop-e2e"}},
            "uplinks": [{"pciAddress": PF_PCI, "name": PF_NAME, "interface": {
                "mtuRequest": 1500, "externalIDs": {"pf": PF_PCI}, "otherConfig": {"e2e": "yes"}}}]}


def _spec(bridges: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"interfaces": [{
        "pciAddress": PF_PCI, "name": PF_NAME, "numVfs": 2,
        "vfGroups": [{"resourceName": "igbvfs", "deviceType": "netdevice", "vfRange": "0-1", "policyName": "p"}]}]}
    spec["bridges"] = {"ovs": [_bridge_spec()]} if bridges else None
    return spec


def _wait(client: Any, namespace: str, what: str, ok: Any, timeout: float, console: Any) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        try:
            last = client.get(SRIOV_NETWORK_NODE_STATE, NODE_NAME, namespace)
        except NotFound:
            last = None
        if last is not None and ok(last):
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\nlast NodeState: "
                         f"{json.dumps(last, indent=1)[-3000:]}\n--- guest console tail ---\n{console()[-5000:]}")


def _sh(shell: GuestShell, cmd: str) -> str:
    rc, out, err = shell.run(cmd)
    assert rc == 0, f"{cmd}: rc {rc}: {err}"
    return out


@pytest.fixture(scope="module")
def scenario(cluster_guest: GuestFactory, control_plane: ControlPlane,
             vm_timings: dict[str, float]) -> Iterator[dict[str, Any]]:
    namespace = f"e2e-ovs-{uuid.uuid4().hex[:6]}"
    create_namespace(control_plane.kubeconfig, namespace)
    client = client_for(control_plane.kubeconfig)
    prepare_cluster(client, namespace, NODE_NAME, spec=_spec(bridges=True))
    rec: dict[str, Any] = {}
    t0 = time.monotonic()
    script = START_OVS + daemon_script(namespace, extra_args=("--manage-software-bridges",))
    with running_drain_manager(control_plane.kubeconfig, namespace), \
            cluster_guest(node=NODE_NAME).start(script, timeout=1400) as guest:
        shell = GuestShell(guest)
        console = lambda: guest.console  # noqa: E731
        guest.wait_for("E2E-OVS-STARTED", timeout=400)
        guest.wait_for(STARTED_LOG, timeout=400)
        assert guest.ready_at is not None
        t_start = time.monotonic()

        def applied(s: dict[str, Any]) -> bool:
            status = s.get("status") or {}
            return status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and bool(status.get("bridges"))
        rec["applied"] = _wait(client, namespace, "Succeeded with status.bridges", applied, 400, console)
        vm_timings["ovs_bridge_daemon_start_to_succeeded_seconds"] = time.monotonic() - t_start
        rec["ports"] = _sh(shell, f"ovs-vsctl list-ports {BRIDGE}").split()
        rec["iface"] = json.loads(_sh(shell, "ovs-vsctl --format=json --columns=mtu_request,external_ids,"
                                             f"other_config,error list Interface {PF_NAME}"))
        rec["bridge_ids"] = _sh(shell, f"ovs-vsctl get Bridge {BRIDGE} external_ids").strip()
        rec["links"] = {link["ifname"]: link for link in json.loads(_sh(shell, "ip -j -d link show"))}

        t_remove = time.monotonic()
        client.patch(SRIOV_NETWORK_NODE_STATE, NODE_NAME, {"spec": {"bridges": None}}, namespace=namespace)

        def removed(s: dict[str, Any]) -> bool:
            status = s.get("status") or {}
            return status.get("syncStatus") == consts.SYNC_STATUS_SUCCEEDED and not status.get("bridges") \
                and not (s.get("spec") or {}).get("bridges")
        rec["removed"] = _wait(client, namespace, "Succeeded without status.bridges", removed, 400, console)
        vm_timings["ovs_bridge_remove_to_succeeded_seconds"] = time.monotonic() - t_remove
        rec["bridges_after"] = _sh(shell, "ovs-vsctl list-br").split()
        rec["links_after"] = {link["ifname"]: link for link in json.loads(_sh(shell, "ip -j -d link show"))}
        t_stop = time.monotonic()
        rc, console_text = guest.stop(timeout=120)
        rec["stop_rc"] = rc
        rec["stop_s"] = time.monotonic() - t_stop
        rec["console_tail"] = console_text[-6000:]
        if dump := os.environ.get("SRIOVOP_E2E_CONSOLE"):  # debugging: keep the guest console
            Path(dump).write_text(console_text)
    vm_timings["ovs_bridge_e2e_total_seconds"] = time.monotonic() - t0
    yield rec
    delete_namespace(control_plane.kubeconfig, namespace)


def test_bridge_created_and_reported(scenario: dict[str, Any]) -> None:
    status = scenario["applied"]["status"]
    assert status["bridges"] == {"ovs": [_bridge_spec()]}
    pf = next(i for i in status["interfaces"] if i["pciAddress"] == PF_PCI)
    assert pf["numVfs"] == 2


def test_ovs_vsctl_sees_the_bridge_outside_the_daemon(scenario: dict[str, Any]) -> None:
    assert scenario["ports"] == [PF_NAME]
    row = dict(zip(scenario["iface"]["headings"], scenario["iface"]["data"][0], strict=True))
    assert row["mtu_request"] == 1500
    assert row["external_ids"] == ["map", [["pf", PF_PCI]]]
    assert row["other_config"] == ["map", [["e2e", "yes"]]]
    assert row["error"] == ["set", []], "ovs-vswitchd could not attach the uplink"
    assert scenario["bridge_ids"] == '{owner=sriovop-e2e}'


def test_vswitchd_built_the_kernel_datapath(scenario: dict[str, Any]) -> None:
    links = scenario["links"]
    assert links[PF_NAME].get("master") == "ovs-system"
    assert links[BRIDGE]["linkinfo"]["info_kind"] == "openvswitch"


def test_removing_the_bridges_removes_the_bridge(scenario: dict[str, Any]) -> None:
    assert scenario["bridges_after"] == []
    assert "master" not in scenario["links_after"][PF_NAME]
    assert BRIDGE not in scenario["links_after"]
    assert scenario["stop_rc"] == 0, f"SIGTERM to exit took {scenario['stop_s']:.1f} s; console:\n" \
        + scenario["console_tail"]
