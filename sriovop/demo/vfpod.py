"""What `sriovop demo pod` applies on the QEMU guest node: a policy for netdevice VFs on the emulated
82576's PF, a SriovNetwork with a VLAN and host-local IPAM, and a pod that names the network only in
its `k8s.v1.cni.cncf.io/networks` annotation (the operator's injector adds the VF resource request).
"""

from __future__ import annotations

import json
from typing import Any

from sriovop.devcluster.images.spec import by_target

NAMESPACE = "sriov-network-operator"
POLICY = "demo-vm-igb"
RESOURCE_NAME = "igbvfs"
RESOURCE = f"openshift.io/{RESOURCE_NAME}"
NUM_VFS = 4
PF_NAME = "eth0"  # the guest's first 82576 PF (PCI 0000:01:00.0)
NETWORK = "demo-vf-net"
VLAN = 100
SUBNET = "10.56.217.0/24"
POD = "demo-vf"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"


def policy(node: str) -> dict[str, Any]:
    """NUM_VFS netdevice VFs on the guest's 82576 PF (vendor 8086, device 10c9), on that node only."""
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": POLICY, "namespace": NAMESPACE},
            "spec": {"resourceName": RESOURCE_NAME, "numVfs": NUM_VFS, "priority": 10, "deviceType": "netdevice",
                     "nicSelector": {"vendor": "8086", "deviceID": "10c9", "pfNames": [PF_NAME]},
                     "nodeSelector": {"kubernetes.io/hostname": node}}}


def network() -> dict[str, Any]:
    """The SriovNetwork whose NetworkAttachmentDefinition the operator writes into `default`."""
    ipam = {"type": "host-local", "subnet": SUBNET, "rangeStart": "10.56.217.10", "rangeEnd": "10.56.217.50"}
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork",
            "metadata": {"name": NETWORK, "namespace": NAMESPACE},
            "spec": {"resourceName": RESOURCE_NAME, "networkNamespace": "default", "vlan": VLAN,
                     "ipam": json.dumps(ipam)}}


def pod(node: str) -> dict[str, Any]:
    """A sleeping pod from the config-daemon image (it has ethtool) with no resource request of its own."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD, "annotations": {NETWORKS_ANNOTATION: NETWORK}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": by_target("config-daemon").name,
                                     "imagePullPolicy": "IfNotPresent", "command": ["sleep", "infinity"]}]}}
