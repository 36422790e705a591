"""`sriovop dev hollow-nodes` registers its Nodes, runs a real daemon per node on its own simulated
host, and leaves nothing behind on Ctrl-C or on `--stop` after its supervisor was SIGKILLed.

Host: simulated (one sriovop.sim host per hollow node, in the fleet's worker processes); the shared
kube-apiserver; no operator (the test writes each node's NodeState itself, as the operator would).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyroute2 import netns

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG
from sriovop.api.v1.supportednics import supported_nic_ids_configmap
from sriovop.devcluster import process
from sriovop.hollow.fleet import FLEET_LABEL, MODELS, HollowNode
from sriovop.hollow.worker import NICENESS
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import CONFIG_MAP, NODE
from sriovop.sim.models import MODELS as SIM_MODELS
from test.support.poll import wait_for

COUNT = 6


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[Client]:
    c = Client(load_config(str(kubeconfig)))
    yield c
    c.close()


def _operator_objects(client: Client, namespace: str) -> None:
    """What a daemon reads at start-up, which the operator's deployment would have created."""
    client.create(CONFIG_MAP, supported_nic_ids_configmap(namespace))
    client.create(SRIOV_OPERATOR_CONFIG, {"metadata": {"name": consts.DEFAULT_CONFIG_NAME, "namespace": namespace},
                                          "spec": {"enableOperatorWebhook": False, "enableInjector": False}})


def _start(tmp_path: Path, kubeconfig: Path, namespace: str, prefix: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "hollow.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sriovop.cli", "dev", "hollow-nodes", "--dir", str(tmp_path / "fleet"),
         "--count", str(COUNT), "--per-process", "3", "--prefix", prefix, "--namespace", namespace,
         "--kubeconfig", str(kubeconfig), "--pools", "bulk=4,canary=2"],
        stdout=subprocess.DEVNULL, stderr=open(log, "wb"))  # noqa: SIM115 - the child owns it
    deadline = time.monotonic() + 240
    while "nodes running" not in log.read_text():
        if proc.poll() is not None:
            raise AssertionError(f"hollow-nodes exited with {proc.returncode}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"hollow-nodes not running within 240s:\n{log.read_text()}")
        time.sleep(0.2)
    return proc, log


def _node_state(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
            "metadata": {"name": name, "namespace": namespace, "annotations": {
                consts.NODE_STATE_DRAIN_ANNOTATION: consts.DRAIN_IDLE,
                consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT: consts.DRAIN_IDLE}},
            "spec": {"interfaces": []}}


def _fleet_record(tmp_path: Path) -> tuple[list[int], list[str]]:
    record = json.loads((tmp_path / "fleet" / "hollow.json").read_text())
    namespaces = [json.loads(p.read_text())["netns"]
                  for p in (tmp_path / "fleet" / "hosts").glob("*/.sriovop-sim/endpoint.json")]
    return record["pids"], namespaces


def _nice(pid: int) -> int:
    """The nice value of a process (proc(5): the 19th field of /proc/PID/stat)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _assert_nothing_left(client: Client, tmp_path: Path, prefix: str, pids: list[int], namespaces: list[str]) -> None:
    assert client.list(NODE, label_selector={FLEET_LABEL: prefix}) == []
    assert [p for p in pids if process.pid_alive(p)] == []
    assert set(namespaces).isdisjoint(netns.listnetns())
    assert not (tmp_path / "fleet" / "hosts").exists()


def test_hollow_nodes_register_report_their_hosts_and_clean_up_on_ctrl_c(
        tmp_path: Path, kubeconfig: Path, namespace: str, client: Client) -> None:
    prefix = f"hc{uuid.uuid4().hex[:6]}"
    _operator_objects(client, namespace)
    proc, log = _start(tmp_path, kubeconfig, namespace, prefix)
    try:
        nodes = {n["metadata"]["name"]: n for n in client.list(NODE, label_selector={FLEET_LABEL: prefix})}
        assert sorted(nodes) == [HollowNode(prefix, i).name for i in range(COUNT)]
        assert len({n["metadata"]["labels"]["kubernetes.io/hostname"] for n in nodes.values()}) == COUNT
        assert sorted(n["metadata"]["labels"]["sriovop.io/hollow-pool"] for n in nodes.values()) == \
            ["bulk"] * 4 + ["canary"] * 2
        pids, namespaces = _fleet_record(tmp_path)
        assert len(pids) == 4 and len(set(namespaces)) == COUNT  # 2 slices x (hosts, daemons); a netns each
        # The fleet stands in for other machines: it yields the CPU to the API server and the operator.
        assert {_nice(pid) for pid in pids} == {min(19, os.nice(0) + NICENESS)}

        # Each daemon, on its own host, answers its NodeState with its own NICs.
        for name in nodes:
            client.create(SRIOV_NETWORK_NODE_STATE, _node_state(name, namespace), namespace)

        def reported() -> dict[str, list[dict[str, Any]]]:
            return {s["metadata"]["name"]: (s.get("status") or {}).get("interfaces") or []
                    for s in client.list(SRIOV_NETWORK_NODE_STATE, namespace)}

        wait_for(lambda: all(reported().get(n) for n in nodes), 180, "every hollow daemon reports its PFs")
        seen_pf_names: set[str] = set()
        for i in range(COUNT):
            node = HollowNode(prefix, i)
            ifaces = reported()[node.name]
            assert sorted(f["name"] for f in ifaces) == sorted(node.pf_names)
            assert {f["deviceID"] for f in ifaces} == {SIM_MODELS[node.model].pf_device}
            seen_pf_names.update(f["name"] for f in ifaces)
        assert len(seen_pf_names) == 2 * COUNT
        assert {HollowNode(prefix, i).model for i in range(COUNT)} == set(MODELS)
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(180)
    assert code == 0, log.read_text()
    assert "deleted 6 Nodes" in log.read_text()
    _assert_nothing_left(client, tmp_path, prefix, pids, namespaces)


def test_stop_cleans_up_after_a_killed_supervisor(tmp_path: Path, kubeconfig: Path, namespace: str,
                                                  client: Client) -> None:
    prefix = f"hk{uuid.uuid4().hex[:6]}"
    _operator_objects(client, namespace)
    proc, _log = _start(tmp_path, kubeconfig, namespace, prefix)
    pids, namespaces = _fleet_record(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert len(client.list(NODE, label_selector={FLEET_LABEL: prefix})) == COUNT  # nobody cleaned up yet
    done = subprocess.run([sys.executable, "-m", "sriovop.cli", "dev", "hollow-nodes", "--dir",
                           str(tmp_path / "fleet"), "--stop"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "deleted 6 Nodes" in done.stderr
    _assert_nothing_left(client, tmp_path, prefix, pids, namespaces)
