"""`sriov` CHECK: is the pod's interface still what ADD made it?

Checks the cached attachment against the host: the interface is in the pod under its name, with the
requested MAC, and the PF still reports the configured VLAN for the VF. (Upstream's CHECK is a no-op.)
"""

from __future__ import annotations

from sriovop.cni.add import sriov_dirs
from sriovop.cni.cache import CachedAdd
from sriovop.cni.context import Node, require_env
from sriovop.cni.errors import DEVICE_FAILURE, INVALID_ENV, CniError
from sriovop.cni.links import index_of, link_state
from sriovop.cni.netconf import NetConf
from sriovop.cni.server import CniRequest
from sriovop.cni.vfdevice import find_vf
from sriovop.host.netns_nofork import netlink_in


def cmd_check(node: Node, req: CniRequest, conf: NetConf) -> None:
    require_env(req.env, "CNI_CONTAINERID", "CNI_IFNAME", "CNI_NETNS")
    cid, ifname = req.env["CNI_CONTAINERID"], req.env["CNI_IFNAME"]
    cache, _ = sriov_dirs(node)
    raw = cache.load(cid, ifname)
    if raw is None:
        raise CniError(DEVICE_FAILURE, "no attachment to check", f"{cid}/{ifname}: ADD left no cache")
    cached = CachedAdd.from_json(raw)
    vf = find_vf(node.root, conf.device_id)
    if conf.vlan is not None:
        have = node.kernel.vf_config(vf.pf_name, vf.pf_pci, vf.index)
        if have.vlan != conf.vlan or have.vlan_qos != (conf.vlan_qos or 0):
            raise CniError(DEVICE_FAILURE, "VLAN changed",
                           f"vlan: VF {vf.index} of {vf.pf_name} has vlan {have.vlan} qos {have.vlan_qos}, "
                           f"expected {conf.vlan} qos {conf.vlan_qos or 0}")
    if cached.dpdk_mode:
        return
    if req.netns_fd is None:
        raise CniError(INVALID_ENV, "cannot open the pod's network namespace", f"CNI_NETNS: {req.env['CNI_NETNS']}")
    pod = netlink_in(req.netns_fd)
    try:
        index = index_of(pod, ifname)
        if index is None:
            raise CniError(DEVICE_FAILURE, "interface missing", f"{ifname} is not in the pod's namespace")
        mac = link_state(pod, index)["mac"]
        if cached.mac and mac != cached.mac:
            raise CniError(DEVICE_FAILURE, "MAC changed", f"mac: {ifname} has {mac}, expected {cached.mac}")
    finally:
        pod.close()
