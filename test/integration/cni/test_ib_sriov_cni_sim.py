"""The `ib-sriov` plugin: GUID, link state, state under ib-sriov, and its configuration errors.

Host: the simulated SR-IOV host (cx6dx PF; the simulator keeps the GUID on the PF side and shows it in
the VF's `infiniband/*/node_guid`); the VF netdev is a real link moved into a real pod namespace.
No InfiniBand hardware here: this is the only proof.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sriovop.cni.ib_sriov import ib_sriov_handler
from sriovop.cni.server import CniRequest, CniResponse, ServerOptions
from sriovop.sim.vfkernel import SimVfKernel
from test.support.cni_sim import CniSim, cni_sim


def call(env: CniSim, command: str, conf: dict[str, Any], pod: str) -> CniResponse:
    handler = ib_sriov_handler(ServerOptions(host_root=env.root, state_dir=env.state_dir),
                               kernel=SimVfKernel(env.root))
    fd = os.open(f"/var/run/netns/{pod}", os.O_RDONLY)
    try:
        return handler(CniRequest(plugin="ib-sriov", env={
            "CNI_COMMAND": command, "CNI_CONTAINERID": "ib1", "CNI_IFNAME": "ib0",
            "CNI_NETNS": f"/var/run/netns/{pod}", "CNI_PATH": ""}, stdin=json.dumps(conf).encode(), netns_fd=fd))
    finally:
        os.close(fd)


def test_guid_link_state_and_restore(tmp_path: Path) -> None:
    with cni_sim(tmp_path, ["cx6dx:1"], vfs=2) as env:
        pci, host_name = sorted(env.vfs.items())[0]
        pod = env.new_netns()
        conf = {"cniVersion": "1.0.0", "name": "ib", "type": "ib-sriov", "deviceID": pci, "pkey": "0x7fff",
                "link_state": "enable", "runtimeConfig": {"infinibandGUID": "C2:00:00:00:00:00:00:01"},
                "args": {"cni": {"guid": "c2:00:00:00:00:00:00:99"}}}
        add = call(env, "ADD", conf, pod)
        assert add.exit_code == 0, add.stdout
        assert json.loads(add.stdout)["interfaces"][0]["name"] == "ib0"
        guid_file = next((env.root / "sys/bus/pci/devices" / pci / "infiniband").glob("*/node_guid"))
        assert guid_file.read_text().strip() == "c200:0000:0000:0001"  # runtimeConfig wins over args.cni
        assert env.vf_config(env.sim.pf(0).pci, 0)["link_state"] == "enable"
        assert "ib0" in env.pod_links(pod)
        assert (env.state_dir / "ib-sriov" / "ib1-ib0").is_file()
        assert not (env.state_dir / "sriov").exists()
        assert call(env, "DEL", conf, pod).exit_code == 0
        assert host_name in env.host_links()
        assert env.vf_config(env.sim.pf(0).pci, 0)["link_state"] == "auto"
        assert env.leftovers() == []


def test_args_cni_guid_and_bad_fields(tmp_path: Path) -> None:
    with cni_sim(tmp_path, ["cx6dx:1"], vfs=1) as env:
        pci = sorted(env.vfs)[0]
        pod = env.new_netns()
        base = {"cniVersion": "1.0.0", "name": "ib", "type": "ib-sriov", "deviceID": pci}
        for fields, field in (({"pkey": "7fff"}, "pkey"), ({"args": {"cni": {"guid": "zz"}}}, "args.cni.guid"),
                              ({"runtimeConfig": {"infinibandGUID": "00:11"}}, "runtimeConfig.infinibandGUID"),
                              ({"rdmaIsolation": "yes"}, "rdmaIsolation"), ({"vlan": 3}, "vlan")):
            out = call(env, "ADD", {**base, **fields}, pod)
            assert out.exit_code == 1 and json.loads(out.stdout)["details"].startswith(f"{field}:"), out.stdout
        assert call(env, "ADD", {**base, "args": {"cni": {"guid": "c2:00:00:00:00:00:00:42"}}}, pod).exit_code == 0
        guid_file = next((env.root / "sys/bus/pci/devices" / pci / "infiniband").glob("*/node_guid"))
        assert guid_file.read_text().strip() == "c200:0000:0000:0042"
        assert call(env, "DEL", base, pod).exit_code == 0
        assert env.leftovers() == []
