"""The metrics exporter's series on the simulated SR-IOV host: upstream's names and labels per VF, and
the pod holding each VF (pod-resources answers given directly here; the real kubelet is in
test/integration/cluster/test_metrics_exporter_kubelet.py)."""

from __future__ import annotations

from pathlib import Path

from sriovop.exporter.collector import UP_METRIC, ExporterCollector
from sriovop.host.vfmetrics import iter_series
from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import ContainerDevices, ContainerResources, PodResources
from test.support.host_sim import applier, sim_host


def test_vf_series_and_the_pod_holding_each_vf(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 2,
                              "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-1"}]}])
        (host.paths.device(pf["pciAddress"]) / "numa_node").write_text("1\n")
        sim.fault(pf["pciAddress"], vf_traffic={"1": {"rx_bytes": 1500, "tx_packets": 3}})
        vfs = [v["pciAddress"] for v in host.discover()[0]["Vfs"]]
        pods = [PodResources("web-0", "apps", (ContainerResources("nginx", (
            ContainerDevices("openshift.io/intel_vfs", (vfs[1], "not-a-pci-id")),
            ContainerDevices("example.com/gpu", ("GPU-0",)))),))]
        collector = ExporterCollector(host.paths, kubelet_socket=Path("/unused"), list_pods=lambda _s: pods,
                                      netns=sim.access.netns)
        series = list(iter_series(collector.render()))
        collector.close()
    rx = {labels["vf"]: (labels, value) for name, labels, value in series if name == "sriov_vf_rx_bytes"}
    assert sorted(rx) == ["0", "1"]
    labels, value = rx["1"]
    assert labels == {"pf": pf["name"], "vf": "1", "pciAddr": vfs[1], "numa_node": "1"} and value == 1500
    assert [v for n, labs, v in series if n == "sriov_vf_tx_packets" and labs["vf"] == "1"] == [3]
    pod_devices = [(labels, value) for name, labels, value in series if name == "sriov_kubepoddevice"]
    assert pod_devices == [({"pciAddr": vfs[1], "dev_type": "openshift.io/intel_vfs", "pod": "web-0",
                             "namespace": "apps", "container": "nginx"}, 1)]
    assert [v for n, _l, v in series if n == UP_METRIC] == [1]


def test_kubelet_unreachable_is_a_value_not_missing_series(tmp_path: Path) -> None:
    def failing(_socket: Path) -> list[PodResources]:
        raise KubeletApiError(_socket, "/v1.PodResourcesLister/List", "UNAVAILABLE", "cannot connect")

    with sim_host(tmp_path, ["82576:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 1}])
        (host.paths.device(pf["pciAddress"]) / "numa_node").write_text("-1\n")
        collector = ExporterCollector(host.paths, kubelet_socket=Path("/unused"), list_pods=failing,
                                      netns=sim.access.netns)
        series = list(iter_series(collector.render()))
        collector.close()
    assert [v for n, _l, v in series if n == UP_METRIC] == [0]
    assert not [n for n, _l, _v in series if n == "sriov_kubepoddevice"]
    assert {labels["numa_node"] for n, labels, _v in series if n.startswith("sriov_vf_")} == {""}
