"""`sriovop status` against NodeStates and Nodes on the real API server, in text and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import CONFIG_MAP as CONFIG_MAP_KIND
from sriovop.runtime.kinds import NODE


def _status(kubeconfig: Path, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sriovop.cli", "status", "--kubeconfig", str(kubeconfig), "-n", namespace, *args],
        capture_output=True, text=True, timeout=60,
    )


def _seed(client: Client, namespace: str, node: str, sync: str, error: str = "") -> None:
    client.create(NODE, {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": node, "annotations": {consts.NODE_DRAIN_ANNOTATION: consts.DRAIN_IDLE}}})
    state = client.create(SRIOV_NETWORK_NODE_STATE, {
        "apiVersion": SRIOV_NETWORK_NODE_STATE.api_version, "kind": "SriovNetworkNodeState",
        "metadata": {"name": node, "namespace": namespace, "annotations": {
            consts.NODE_STATE_DRAIN_ANNOTATION: consts.DRAIN_IDLE,
            consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE}},
        "spec": {"interfaces": [{"pciAddress": "0000:3b:00.0", "numVfs": 8, "name": "ens1f0", "vfGroups": [
            {"resourceName": "intelnics", "deviceType": "netdevice", "vfRange": "0-7", "policyName": "p1"}]}]},
    }, namespace=namespace)
    state["status"] = {"syncStatus": sync, "lastSyncError": error, "interfaces": [{
        "name": "ens1f0", "pciAddress": "0000:3b:00.0", "vendor": "8086", "deviceID": "158b",
        "numVfs": 4, "totalvfs": 64, "mtu": 9000, "linkType": "ETH", "linkAdminState": "up",
        "linkSpeed": "25000 Mb/s", "driver": "i40e"}]}
    client.update_status(SRIOV_NETWORK_NODE_STATE, state)


def test_status_text_and_json(kubeconfig: Path, namespace: str) -> None:
    client = Client(load_config(str(kubeconfig)))
    node_a, node_b = f"{namespace}-a", f"{namespace}-b"
    _seed(client, namespace, node_a, consts.SYNC_STATUS_SUCCEEDED)
    _seed(client, namespace, node_b, consts.SYNC_STATUS_FAILED, "ens1f0: write-numvfs: device busy")
    client.create(CONFIG_MAP_KIND, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": consts.SUPPORTED_NIC_IDS_CONFIGMAP, "namespace": namespace},
        "data": {"Intel_i40e_XXV710": "8086 158b 154c"}}, namespace=namespace)

    out = _status(kubeconfig, namespace, "-o", "json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [n["node"] for n in report["nodes"]] == [node_a, node_b]
    pf = report["nodes"][0]["pfs"][0]
    assert (pf["name"], pf["numVfs"], pf["desiredVfs"], pf["totalVfs"], pf["mtu"]) == ("ens1f0", 4, 8, 64, 9000)
    assert pf["model"] == "Intel i40e XXV710"
    assert pf["vfGroups"] == [{"resource": "intelnics", "vfRange": "0-7", "deviceType": "netdevice",
                               "policy": "p1"}]
    assert report["nodes"][1]["lastSyncError"] == "ens1f0: write-numvfs: device busy"

    text = _status(kubeconfig, namespace)
    assert text.returncode == 0, text.stderr
    assert "\x1b[" not in text.stdout  # not a TTY: no colour
    lines = text.stdout.splitlines()
    assert f"NODE {node_a}  sync=Succeeded  drain=Idle" in lines
    assert f"NODE {node_b}  sync=Failed  drain=Idle" in lines
    assert "  last error: ens1f0: write-numvfs: device busy" in lines
    assert any(line.split()[:4] == ["ens1f0", "0000:3b:00.0", "Intel", "i40e"] and "4->8/64" in line
               for line in lines)
    assert "      VFs 0-7     -> intelnics (netdevice, policy p1)" in lines


def test_status_with_no_node_states(kubeconfig: Path, namespace: str) -> None:
    out = _status(kubeconfig, namespace)
    assert out.returncode == 0
    assert out.stdout == f"no SriovNetworkNodeStates in namespace {namespace}\n"
