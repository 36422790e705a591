"""`sriovop metrics-exporter` against a REAL kubelet: the pod holding each VF, from pod-resources.

Hosts: the kubelet, containerd and pod are real (the session's 2-node cluster on this machine); the VFs
are those of the simulated SR-IOV host (no SR-IOV hardware here). A test device plugin registers the
simulated VFs' PCI addresses as an extended resource with the kubelet (plugin-watcher registration,
gRPC served by sriovop.kubelet); a pod asks for one; the kubelet allocates a VF and reports it in its
pod-resources API; the exporter, run as users run it, joins that with the VF's counters.
"""

from __future__ import annotations

import subprocess
import urllib.request
import uuid
from pathlib import Path

from sriovop.devcluster.process import free_port
from sriovop.exporter.collector import UP_METRIC
from sriovop.host.vfmetrics import iter_series
from sriovop.kubelet.podresources import list_pod_resources
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import NODE, POD
from test.support.cluster import POD_TIMEOUT_S, SRIOVOP, ClusterNodes, pod_on, running_pod
from test.support.device_plugin import FakeDevicePlugin
from test.support.host_sim import applier, sim_host
from test.support.poll import wait_for

NODE_NAME = "sriovop-node-2"


def _scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            return str(response.read().decode())
    except OSError:
        return None


def test_pod_holding_a_vf_is_exported_from_the_real_kubelet(
    cluster_nodes: ClusterNodes, kube: Client, node_namespace: str, tmp_path: Path
) -> None:
    kubelet_root = cluster_nodes.dir / "nodes" / NODE_NAME / "kubelet"
    resource = f"sriovop.test/vf-{uuid.uuid4().hex[:6]}"
    with sim_host(tmp_path, ["xxv710:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 3,
                              "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-2"}]}])
        vfs = [v["pciAddress"] for v in host.discover()[0]["Vfs"]]
        numa = (host.paths.device(pf["pciAddress"]) / "numa_node").read_text().strip()
        plugin = FakeDevicePlugin(kubelet_root, resource, vfs).start()
        try:
            assert plugin.registered.wait(60), f"kubelet did not register the plugin: {plugin.registration_error}"
            wait_for(lambda: (kube.get(NODE, NODE_NAME)["status"].get("allocatable") or {}).get(resource) == "3",
                     timeout=60, what=f"{resource}: 3 allocatable on {NODE_NAME}")
            pod = pod_on(NODE_NAME, "vf-user")
            pod["spec"]["containers"][0]["resources"] = {"limits": {resource: "1"}}
            kube.create(POD, pod, node_namespace)
            wait_for(lambda: running_pod(kube, node_namespace, "vf-user"), timeout=POD_TIMEOUT_S,
                     what="the pod holding a VF Running")
            assert len(plugin.allocations) == 1 and len(plugin.allocations[0]) == 1, plugin.allocations
            allocated = plugin.allocations[0][0]
            assert allocated in vfs

            # The kubelet's own answer, through our client.
            socket = kubelet_root / "pod-resources" / "kubelet.sock"
            mine = [p for p in list_pod_resources(socket) if p.namespace == node_namespace]
            assert [(p.name, c.name, d.resource_name, d.device_ids) for p in mine for c in p.containers
                    for d in c.devices] == [("vf-user", "main", resource, (allocated,))]

            # The exporter as the DaemonSet runs it (paths pointed at this node and the simulated host).
            sim.fault(pf["pciAddress"], vf_traffic={str(vfs.index(allocated)): {"rx_bytes": 4242}})
            port = free_port()
            exporter = subprocess.Popen(
                [*SRIOVOP, "metrics-exporter", f"--web.listen-address=127.0.0.1:{port}",
                 f"--path.sysbuspci={sim.root}/sys/bus/pci/devices", "--simulated-host",
                 f"--path.kubeletsocket={socket}",
                 "--collector.kubepoddevice=true", "--log-format=console"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                text = wait_for(lambda: _scrape(port), timeout=60, what="the exporter's /metrics")
            finally:
                exporter.terminate()
                _out, err = exporter.communicate(timeout=30)
            assert exporter.returncode == 0, err.decode()
        finally:
            plugin.stop()
    series = list(iter_series(text))
    held = [labels for name, labels, _v in series if name == "sriov_kubepoddevice"
            and labels["namespace"] == node_namespace]
    assert held == [{"pciAddr": allocated, "dev_type": resource, "pod": "vf-user", "namespace": node_namespace,
                     "container": "main"}]
    rx = [(labels, value) for name, labels, value in series if name == "sriov_vf_rx_bytes"
          and labels["pciAddr"] == allocated]
    assert rx == [({"pf": pf["name"], "vf": str(vfs.index(allocated)), "pciAddr": allocated, "numa_node": numa}, 4242)]
    assert [v for n, _l, v in series if n == UP_METRIC] == [1]
