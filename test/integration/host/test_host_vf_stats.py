"""Per-VF counters read back from the simulated host (the daemon exports them as metrics)."""

from __future__ import annotations

from pathlib import Path

from sriovop.host.stats import COUNTERS, vf_counters
from test.support.host_sim import applier, sim_host


def test_vf_counters_follow_traffic(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{
            "pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 3,
            "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-1"}, {"deviceType": "vfio-pci", "vfRange": "2-2"}],
        }])
        sim.fault(pf["pciAddress"], vf_traffic={"1": {"rx_bytes": 1500, "rx_packets": 1, "tx_dropped": 2}})
        counters = vf_counters(host, host.discover())
    # The vfio-pci VF has no netdev and veth reports no VF stats: it has no source here.
    assert [(c.pf, c.vf) for c in counters] == [(pf["name"], 0), (pf["name"], 1)]
    assert counters[0].values == dict.fromkeys(COUNTERS, 0)
    assert counters[1].values == {**dict.fromkeys(COUNTERS, 0), "rx_bytes": 1500, "rx_packets": 1, "tx_dropped": 2}
    assert counters[1].pci_addr.startswith("0000:18:02.")
