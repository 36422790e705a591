"""`sriovop device-plugin` against a REAL kubelet: allocatable, a pod's env and device-info file, a kubelet
restart, the PF link going down and coming back.

Hosts: the kubelet, containerd and pod are real (the session's 2-node cluster on this machine, node
sriovop-node-2); the VFs are those of the simulated SR-IOV host (no SR-IOV hardware here), and the plugin
runs as a process on this machine, as the DaemonSet's container would on a node. It registers through the
kubelet's plugin watcher (`<root-dir>/plugins_registry`), because `device-plugins/kubelet.sock` is fixed at
/var/lib/kubelet whatever the kubelet's --root-dir, so every kubelet on this machine shares it and empties
it when it starts; the kubelet.sock mode is proven against a stand-in in
test/integration/deviceplugin/test_device_plugin_sim.py.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

from sriovop.host.netlink import Netlink
from sriovop.kubelet.channel import KubeletApiError
from sriovop.kubelet.podresources import allocatable_devices, list_pod_resources
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import NODE, POD
from test.support.cluster import POD_TIMEOUT_S, SRIOVOP, ClusterNodes, pod_on, running_pod
from test.support.device_plugin_process import device_plugin
from test.support.failover_nodefaults import crictl
from test.support.host_sim import applier, sim_host
from test.support.poll import wait_for

NODE_NAME = "sriovop-node-2"
PREFIX = "sriovop.test"


def _allocatable(kube: Client, resource: str) -> str | None:
    return (kube.get(NODE, NODE_NAME)["status"].get("allocatable") or {}).get(resource)


def _kubelet_devices(socket: Path, resource: str) -> tuple[str, ...]:
    """The devices the running kubelet process can allocate for `resource` (empty while it cannot say)."""
    try:
        return tuple(d for c in allocatable_devices(socket, timeout=5) if c.resource_name == resource
                     for d in c.device_ids)
    except KubeletApiError:
        return ()


def _container_env(containerd: Path, namespace: str, pod: str) -> dict[str, str]:
    """The environment of the pod's `main` container process, read from /proc (what the program sees)."""
    pod_ids = crictl(containerd, "pods", "--namespace", namespace, "--name", pod, "-q").split()
    [cid] = crictl(containerd, "ps", "--pod", pod_ids[0], "--name", "main", "-q").split()
    pid = json.loads(crictl(containerd, "inspect", cid))["info"]["pid"]
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _ready(kube: Client) -> bool:
    conditions = kube.get(NODE, NODE_NAME)["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_device_plugin_with_a_real_kubelet(cluster_nodes: ClusterNodes, kube: Client, node_namespace: str,
                                           tmp_path: Path) -> None:
    kubelet_root = cluster_nodes.dir / "nodes" / NODE_NAME / "kubelet"
    pod_resources = kubelet_root / "pod-resources" / "kubelet.sock"
    name = f"vf_{uuid.uuid4().hex[:6]}"
    resource = f"{PREFIX}/{name}"
    devinfo = tmp_path / "devinfo"
    log = tmp_path / "device-plugin.log"
    with sim_host(tmp_path, ["e810:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 4,
                              "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-3"}]}])
        vfs = [v["pciAddress"] for v in host.discover()[0]["Vfs"]]
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"resourceList": [{"resourceName": name,
                                                        "selectors": [{"pfNames": [pf["name"]]}]}]}))
        with device_plugin(log, f"--config-file={config}", f"--resource-prefix={PREFIX}",
                           f"--host-root={sim.root}", "--simulated-host",
                           f"--plugin-registry-dir={kubelet_root / 'plugins_registry'}",
                           f"--devinfo-dir={devinfo}", "--watch-interval=1", "--health-interval=1"):
            started = time.monotonic()
            wait_for(lambda: _allocatable(kube, resource) == "4", timeout=120, what=f"{resource}: 4 allocatable")
            print(json.dumps({"registered_to_allocatable_s": round(time.monotonic() - started, 1)}))

            # A pod asking for one VF gets its PCI address in its environment, and the CNI's device-info file.
            pod = pod_on(NODE_NAME, "vf-user")
            pod["spec"]["containers"][0]["resources"] = {"limits": {resource: "1"}}
            kube.create(POD, pod, node_namespace)
            wait_for(lambda: running_pod(kube, node_namespace, "vf-user"), timeout=POD_TIMEOUT_S,
                     what="the pod holding a VF Running")
            env = _container_env(cluster_nodes.containerd_socket(NODE_NAME), node_namespace, "vf-user")
            key = f"PCIDEVICE_SRIOVOP_TEST_{name.upper()}"
            allocated = env[key]
            assert allocated in vfs, env
            assert json.loads(env[f"{key}_INFO"]) == {allocated: {"generic": {"deviceID": allocated}}}
            info = devinfo / f"{PREFIX}-{name}-{allocated}-device.json"
            assert json.loads(info.read_text())["pci"] == {"pci-address": allocated}
            held = [d.device_ids for p in list_pod_resources(pod_resources) if p.name == "vf-user"
                    for c in p.containers for d in c.devices if d.resource_name == resource]
            assert held == [(allocated,)]

            # The kubelet restarts: the new one finds the plugin again and its devices return.
            restart = time.monotonic()
            subprocess.run([*SRIOVOP, "dev", "cluster", "restart-kubelet", "--dir", str(cluster_nodes.dir),
                            "--node", NODE_NAME], check=True, capture_output=True, timeout=120)
            wait_for(lambda: len(_kubelet_devices(pod_resources, resource)) == 4, timeout=120,
                     what="the restarted kubelet's allocatable devices")
            devices_back = time.monotonic() - restart
            wait_for(lambda: _ready(kube) and _allocatable(kube, resource) == "4", timeout=120,
                     what="the node Ready with 4 allocatable after the kubelet restart")
            print(json.dumps({"kubelet_restart_to_devices_s": round(devices_back, 1),
                              "kubelet_restart_to_node_allocatable_s": round(time.monotonic() - restart, 1)}))
            assert log.read_text().count("registered by the kubelet's plugin watcher") >= 2
            assert running_pod(kube, node_namespace, "vf-user"), "the kubelet restart must not end the pod"

            # The PF's link goes down: every VF Unhealthy, allocatable 0 (capacity stays); back up: 4 again.
            netns = sim.netns
            with Netlink(netns) as nl:
                nl.set_down(pf["name"])
                down = time.monotonic()
                wait_for(lambda: _allocatable(kube, resource) == "0", timeout=120,
                         what=f"{resource}: 0 allocatable with the PF link down")
                capacity = kube.get(NODE, NODE_NAME)["status"]["capacity"].get(resource)
                down_s = time.monotonic() - down
                nl.set_up(pf["name"])
                up = time.monotonic()
                wait_for(lambda: _allocatable(kube, resource) == "4", timeout=120,
                         what=f"{resource}: 4 allocatable with the PF link up again")
            print(json.dumps({"link_down_to_allocatable_0_s": round(down_s, 1),
                              "link_up_to_allocatable_4_s": round(time.monotonic() - up, 1)}))
            assert capacity == "4"
            kube.delete(POD, "vf-user", node_namespace)
