"""Managed OVS bridges on the simulated SR-IOV host with a real OVSDB (ovsdb-server from Debian's
openvswitch-switch, no vswitchd): spec.bridges through the generic plugin, checked with `ovs-vsctl`
from outside the daemon's code."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sriovop.host import ApplyError, Host
from sriovop.host import steps as S
from sriovop.host.ovs import OvsBridges
from sriovop.host.plugins import GenericPlugin
from sriovop.sim.ovs import SimOvsdb
from test.support.host_sim import FAST, sim_host

MANAGED = replace(FAST, manage_software_bridges=True)


def node_state(host: Host, spec_ifaces: list[dict[str, Any]], bridges: list[dict[str, Any]],
               plugin: GenericPlugin) -> dict[str, Any]:
    status: dict[str, Any] = {"interfaces": host.discover()}
    if plugin.bridges is not None:
        status["bridges"] = {"ovs": plugin.bridges.status()}
    return {"spec": {"interfaces": spec_ifaces, "bridges": {"ovs": bridges}}, "status": status}


def bridge(pf: dict[str, Any], *, mtu: int = 0, options: dict[str, str] | None = None,
           datapath: str = "") -> dict[str, Any]:
    name = "br-" + pf["pciAddress"].replace(":", "_")
    iface: dict[str, Any] = {"externalIDs": {"owner": "sriovop"}}
    if mtu:
        iface["mtuRequest"] = mtu
    if options:
        iface["options"] = options
    out: dict[str, Any] = {"name": name, "uplinks": [{"pciAddress": pf["pciAddress"], "name": pf["name"],
                                                      "interface": iface}],
                           "bridge": {"externalIDs": {"k": "v"}, "otherConfig": {"hwaddr": "02:00:00:00:00:01"}}}
    if datapath:
        out["bridge"]["datapathType"] = datapath
    return out


def vsctl_json(ovs: SimOvsdb, table: str, record: str, columns: str) -> dict[str, Any]:
    data = json.loads(ovs.vsctl("--format=json", f"--columns={columns}", "list", table, record))
    return dict(zip(data["headings"], data["data"][0], strict=True))


def test_bridges_created_updated_reported_and_removed(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host), SimOvsdb(host.paths.root) as ovs:
        host.init()
        pf = host.discover()[0]
        iface = {"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 2, "eSwitchMode": "switchdev",
                 "vfGroups": [{"vfRange": "0-1", "deviceType": "netdevice", "resourceName": "r"}]}
        ovs.vsctl("add-br", "br-admin")  # made by hand: never touched by the daemon
        plugin = GenericPlugin(host, options=MANAGED)
        want = [bridge(pf, mtu=9000, options={"n_rxq": "2"})]

        ns = node_state(host, [iface], want, plugin)
        assert plugin.on_node_state_change(ns).drain  # bridges changed: upstream drains
        plugin.apply()

        name = want[0]["name"]
        assert sorted(ovs.vsctl("list-br").split()) == sorted(["br-admin", name])
        assert ovs.vsctl("list-ports", name).split() == [pf["name"]]
        row = vsctl_json(ovs, "Interface", pf["name"], "mtu_request,options,external_ids")
        assert row["mtu_request"] == 9000
        assert row["options"] == ["map", [["n_rxq", "2"]]]
        assert row["external_ids"] == ["map", [["owner", "sriovop"]]]
        br = vsctl_json(ovs, "Bridge", name, "external_ids,other_config")
        assert br["external_ids"] == ["map", [["k", "v"]]]
        assert br["other_config"] == ["map", [["hwaddr", "02:00:00:00:00:01"]]]

        # status.bridges reads OVSDB back and equals the spec: no drift, no drain.
        ns = node_state(host, [iface], want, plugin)
        assert ns["status"]["bridges"]["ovs"] == want
        assert not plugin.check_status_changes(ns)
        assert not plugin.on_node_state_change(ns).drain

        # Someone removes the uplink behind the daemon's back: drift, and the next apply repairs it.
        ovs.vsctl("del-port", name, pf["name"])
        assert plugin.check_status_changes(node_state(host, [iface], want, plugin))
        plugin.apply()
        assert ovs.vsctl("list-ports", name).split() == [pf["name"]]

        # Update: new interface options and datapath type.
        want2 = [bridge(pf, mtu=9000, options={"n_rxq": "4"}, datapath="netdev")]
        plugin.on_node_state_change(node_state(host, [iface], want2, plugin))
        plugin.apply()
        assert vsctl_json(ovs, "Interface", pf["name"], "options")["options"] == ["map", [["n_rxq", "4"]]]
        assert vsctl_json(ovs, "Bridge", name, "datapath_type")["datapath_type"] == "netdev"
        assert node_state(host, [iface], want2, plugin)["status"]["bridges"]["ovs"] == want2

        # The policy goes away: the managed bridge goes, the administrator's stays.
        plugin.on_node_state_change(node_state(host, [], [], plugin))
        plugin.apply()
        assert ovs.vsctl("list-br").split() == ["br-admin"]
        assert OvsBridges(host.paths).managed() == {}


def test_bridges_without_management_or_without_ovsdb_fail_naming_the_step(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["cx6dx:1"]) as (_sim, host):
        host.init()
        pf = host.discover()[0]
        want = [bridge(pf)]
        # Bridge management off: the spec's bridges are not silently ignored.
        off = GenericPlugin(host, options=FAST)
        off.on_node_state_change(node_state(host, [], want, off))
        with pytest.raises(ApplyError) as info:
            off.apply()
        assert info.value.step == S.CONFIGURE_OVS_BRIDGE and info.value.pf == pf["pciAddress"]
        assert "manageSoftwareBridges" in info.value.reason
        # Management on but no OVSDB answering: Failed with the bridge and the reason.
        on = GenericPlugin(host, options=MANAGED)
        on.on_node_state_change({"spec": {"interfaces": [], "bridges": {"ovs": want}},
                                 "status": {"interfaces": host.discover()}})
        with pytest.raises(ApplyError) as info:
            on.apply()
        assert info.value.step == S.CONFIGURE_OVS_BRIDGE and want[0]["name"] in info.value.reason
        assert "db.sock" in info.value.reason
