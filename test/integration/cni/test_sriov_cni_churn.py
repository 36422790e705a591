"""100 ADD/DEL cycles of the `sriov` plugin, one of them DELeted after its pod namespace died.

Host: the simulated SR-IOV host (PF side simulated, VF netdevs and pod namespaces real; IPAM is the
real host-local plugin). Every VF must end with its original name and MAC, default attributes, and no
cache or allocation file may be left.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyroute2 import netns

from sriovop.sim.vf_netdevs import kill_netns
from test.support.cni_sim import cni_sim

CYCLES = 100
DEAD_NETNS_CYCLE = 50


def test_churn_leaves_every_vf_as_it_was(tmp_path: Path) -> None:
    with cni_sim(tmp_path, ["xxv710:1"], vfs=4) as env:
        originals = {name: env.host_links()[name] for name in env.vfs.values()}
        configs = {i: env.vf_config(env.sim.pf(0).pci, i) for i in range(4)}
        vfs = sorted(env.vfs)
        for cycle in range(CYCLES):
            pci = vfs[cycle % len(vfs)]
            pod = env.new_netns()
            conf = {"cniVersion": "1.0.0", "name": "churn", "type": "sriov", "deviceID": pci, "vlan": 100 + cycle,
                    "mac": f"02:00:00:00:{cycle // 256:02x}:{cycle % 256:02x}", "spoofchk": "off",
                    "ipam": {"type": "host-local", "subnet": "10.99.0.0/24", "dataDir": str(tmp_path / "ipam")}}
            cid = f"churn{cycle}"
            add = env.call("ADD", conf, pod, container_id=cid)
            assert add.exit_code == 0, (cycle, add.stdout)
            assert json.loads(add.stdout)["interfaces"][0]["mac"] == conf["mac"]
            if cycle == DEAD_NETNS_CYCLE:
                assert kill_netns(env.root, pod) == ["net1"]
            dele = env.call("DEL", conf, pod, container_id=cid)
            assert dele.exit_code == 0, (cycle, dele.stdout)
            if cycle != DEAD_NETNS_CYCLE:
                netns.remove(pod)
            env.namespaces.remove(pod)
        links = env.host_links()
        for name, before in originals.items():
            assert (links[name]["mac"], links[name]["mtu"]) == (before["mac"], before["mtu"]), name
        assert {i: env.vf_config(env.sim.pf(0).pci, i) for i in range(4)} == configs
        assert "net1" not in links
        assert env.leftovers() == []
        assert not [p for p in (tmp_path / "ipam" / "churn").iterdir() if p.name.startswith("10.")]
