"""The metrics endpoint of `sriovop config-daemon`: one series per VF and counter, read at scrape time."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.devcluster.process import free_port
from sriovop.host.vfmetrics import iter_series
from sriovop.sim.host import SimHost
from test.support.daemon_harness import DaemonProcess, client_for, pf_spec, prepare_cluster, wait_sync
from test.support.poll import wait_for

COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200
        return resp.read().decode()


def test_metrics_endpoint_serves_per_vf_counters(kubeconfig: Path, namespace: str, node_name: str, sim: SimHost,
                                                 tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    xxv, igb = sim.describe()["pfs"]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 3), pf_spec(igb, 2)]})
    port = free_port()
    daemon = DaemonProcess(kubeconfig, namespace, node_name, sim.root, tmp_path / "daemon.log",
                           extra_args=["--metrics-bind-address", f"127.0.0.1:{port}"])
    try:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        # Traffic: the simulated kernel's VF netdev counters (what the VF driver would count).
        expected: dict[tuple[str, str], dict[str, int]] = {}
        for pf_index, pf in enumerate((xxv, igb)):
            sim_pf = sim.kernel.pfs[pf["pciAddress"]]
            for i, vf in sorted(sim_pf.vfs.items()):
                net = sim.kernel.dev_dir(vf.pci) / "net"
                stats = next(net.iterdir()) / "statistics"
                stats.mkdir(exist_ok=True)
                values = {c: 1000 * pf_index + 10 * i + k for k, c in enumerate(COUNTERS)}
                for counter, value in values.items():
                    (stats / counter).write_text(f"{value}\n")
                expected[(vf.pci, str(i))] = values
        text = wait_for(lambda: (t := scrape(port)) and "sriov_vf_rx_bytes{" in t and t, 30, "VF series")
        for counter in COUNTERS:
            assert f"# TYPE sriov_vf_{counter} counter" in text
        series = [(n, lb, v) for n, lb, v in iter_series(text) if n.startswith("sriov_vf_")]
        assert len(series) == 5 * len(COUNTERS), "one series per VF and counter"
        names = {pf["pciAddress"]: pf["name"] for pf in (xxv, igb)}
        for name, labels, value in series:
            counter = name.removeprefix("sriov_vf_")
            key = (labels["pciAddr"], labels["vf"])
            assert value == expected[key][counter], (name, labels)
            assert labels["node"] == node_name
            owner = next(p for p in (xxv, igb) if labels["pciAddr"] in
                         {v.pci for v in sim.kernel.pfs[p["pciAddress"]].vfs.values()})
            assert labels["pf"] == names[owner["pciAddress"]]
        # Read on scrape: new counter values show up at once.
        first_vf = sim.kernel.pfs[xxv["pciAddress"]].vfs[0]
        stats = next((sim.kernel.dev_dir(first_vf.pci) / "net").iterdir()) / "statistics"
        (stats / "rx_bytes").write_text("123456789\n")
        again = {(n, lb["pciAddr"]): v for n, lb, v in iter_series(scrape(port)) if n.startswith("sriov_vf_")}
        assert again[("sriov_vf_rx_bytes", first_vf.pci)] == 123456789
        # The controller's own metrics are on the same endpoint.
        assert 'controller_runtime_reconcile_total{controller="sriov-config-daemon"' in text
    finally:
        assert daemon.stop() == 0, daemon.log_text()[-3000:]
