"""`sriovop plan` against reality for the rules of the daemon's other plugins: a Mellanox firmware change
(mstconfig) that needs a reboot, and a change of spec.bridges only (manageSoftwareBridges) that drains.
Each scenario is planned on the real control plane, then applied with the operator's node-policy and
drain controllers and the config daemon running, and the NodeState spec (interfaces and bridges), the
drain/reboot request and the device-plugin ConfigMap are compared with the plan.

Host: one simulated SR-IOV host (sriovop.sim) with a dual-port ConnectX-6 Dx, an OVSDB
(sriovop.sim.ovs) and the fake mstconfig (test/support/host_fake_mstconfig.py) whose firmware
allows 8 VFs; the daemon manages software bridges. The scenarios run in order on one cluster.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.host.decision import HOST_FACTS_ANNOTATION, HostFacts
from sriovop.plan.compute import compute_plan
from sriovop.plan.render import render_plan
from sriovop.plan.snapshot import read_snapshot
from sriovop.runtime.kinds import CONFIG_MAP
from test.support.host_sim import FAST
from test.support.plan_cluster import (
    IOMMU,
    SUFFIX,
    Cluster,
    converged,
    create_or_replace,
    pol,
    reboot_if_asked,
    short,
)
from test.support.plan_cluster import plan_cluster as start_plan_cluster
from test.support.poll import wait_for

FAKE_MST = Path(__file__).resolve().parents[2] / "support" / "host_fake_mstconfig.py"
HOSTS = {"n-m": (["cx6dx"], IOMMU, {"rack": "rm"})}
#: Its own node group: the package's other plan cluster may run on the same control plane.
GROUP = {"plan-test-vendor": SUFFIX}
FIRMWARE = {"SRIOV_EN": 1, "NUM_OF_VFS": 8, "LINK_TYPE_P1": 2, "LINK_TYPE_P2": 2}


@pytest.fixture(scope="module")
def vendor_cluster(control_plane: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("plan-vendor")
    bindir = tmp / "bin"
    bindir.mkdir()
    shutil.copy(FAKE_MST, bindir / "mstconfig")
    os.chmod(bindir / "mstconfig", 0o755)
    state = tmp / "mst-state.json"
    state.write_text("{}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        mp.setenv("FAKE_MST_STATE", str(state))
        mp.setenv("FAKE_MST_LOG", str(tmp / "mst-log.jsonl"))
        with start_plan_cluster(control_plane.kubeconfig, tmp, hosts=HOSTS, ovs=True,
                                feature_gates={consts.FG_MANAGE_SOFTWARE_BRIDGES: True}, group=GROUP,
                                apply_options=replace(FAST, manage_software_bridges=True)) as c:
            (node,) = c.sims
            first = c.sims[node].describe()["pfs"][0]["pciAddress"]
            state.write_text(json.dumps({first: FIRMWARE}))

            def published() -> bool:
                st = c.client.get(SRIOV_NETWORK_NODE_STATE, node, c.namespace)
                raw = (st["metadata"].get("annotations") or {}).get(HOST_FACTS_ANNOTATION) or "{}"
                facts = HostFacts.from_json(raw)
                return dict(facts.mellanox_firmware.get(first) or {}) == FIRMWARE and facts.manages_bridges
            wait_for(published, 90, "the daemon to publish the firmware settings and bridge management")
            yield c


def mlx(name: str, *, vfs: int, bridge_rxq: str | None = None) -> dict[str, Any]:
    """A policy on port 0 of the ConnectX-6 Dx; with `bridge_rxq`, switchdev with a managed OVS bridge."""
    extra: dict[str, Any] = {}
    if bridge_rxq is not None:
        extra = {"eSwitchMode": "switchdev",
                 "bridge": {"ovs": {"uplink": {"interface": {"options": {"n_rxq": bridge_rxq}}}}}}
    return pol(name, vendor="15b3", pf=["ens1f0"], vfs=vfs, res="rm", sel=GROUP, **extra)


#: (what it shows, the policy, the planned disruption, the planned reasons that must be there)
SCENARIOS = [
    ("new policy: 4 VFs, the firmware allows 8 (0 -> N, no firmware change)", mlx("p-m", vfs=4), "none", []),
    ("16 VFs: above the firmware's NUM_OF_VFS, mstconfig then a reboot", mlx("p-m", vfs=16), "reboot",
     ["firmware NUM_OF_VFS 8 < 16"]),
    ("switchdev with a managed OVS bridge", mlx("p-m", vfs=16, bridge_rxq="2"), "drain", []),
    ("only the bridge's uplink settings change: spec.bridges differs from OVS, a drain",
     mlx("p-m", vfs=16, bridge_rxq="4"), "drain", ["spec.bridges differs from the managed OVS bridges"]),
]


@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s[0] for s in SCENARIOS])
def test_plan_matches_reality_for_firmware_and_bridges(vendor_cluster: Cluster, index: int) -> None:
    c = vendor_cluster
    _, policy, disruption, reasons = SCENARIOS[index]
    plan = compute_plan(read_snapshot(c.client, c.namespace), [policy])
    (node,) = plan["nodes"]
    assert short(node["name"]) == "n-m"
    assert plan["admission"]["allowed"], plan["admission"]
    assert node.get("daemonError") is None, node
    assert node["disruption"] == disruption, node
    planned_reasons = " | ".join(node.get("drainReasons", []) + node.get("rebootReasons", []))
    text = render_plan(plan)
    for reason in reasons:
        assert reason in planned_reasons, (reason, planned_reasons)
        assert reason in text, text
    if index == 3:  # the point of the scenario: the interfaces stay as they are
        state = c.client.get(SRIOV_NETWORK_NODE_STATE, node["name"], c.namespace)
        assert state["spec"]["interfaces"] == node["spec"]["interfaces"]
        assert state["spec"]["bridges"] != node["spec"]["bridges"]

    c.log.reset([])
    create_or_replace(c, {**policy, "metadata": {"name": policy["metadata"]["name"], "namespace": c.namespace}})
    name, rebooted = node["name"], []

    def done() -> bool:
        if not rebooted and node["disruption"] == "reboot" and reboot_if_asked(c, name, node):
            rebooted.append(True)
        if not converged(c, name, node):
            return False
        status = (c.client.get(SRIOV_NETWORK_NODE_STATE, name, c.namespace).get("status") or {})
        return (status.get("bridges") or {}) == node["spec"].get("bridges", {})

    wait_for(done, 180, f"{name} to converge on the planned spec and bridges")
    state = c.client.get(SRIOV_NETWORK_NODE_STATE, name, c.namespace)
    assert state["spec"].get("interfaces", []) == node["spec"]["interfaces"]
    assert state["spec"].get("bridges", {}) == node["spec"].get("bridges", {})
    assert c.log.level(name) == disruption, (c.log.seen.get(name), node)
    assert bool(rebooted) == (disruption == "reboot")
    cm = wait_for(lambda: (c.client.get(CONFIG_MAP, consts.DEVICE_PLUGIN_CONFIGMAP, c.namespace).get("data") or {})
                  .get(name) == node["devicePluginConfig"], 60, "the device-plugin ConfigMap")
    assert cm
    assert not c.log.errors
