"""`sriov` DEL: give the VF back exactly as ADD found it.

Idempotent by construction: no cache means nothing of ours is on the VF (a second DEL, or the node
rebooted) and DEL succeeds. With a cache, under the VF's lock: IPAM release, PF-side attributes back
(before the netdev moves: some drivers refuse otherwise), then the netdev — found in the pod by its
name, or, when the pod's namespace is gone (the kernel has returned the VF to the host namespace
under its pod name), in the host by PCI address — gets its MAC, MTU and name back in the host. Then
the allocation and cache files go, once the VF reads back as ADD found it (`settle`: what a driver
changed behind the restore is applied again).
"""

from __future__ import annotations

from sriovop.cni import ipam
from sriovop.cni.add import restore_netdev, return_to_host, sriov_dirs
from sriovop.cni.cache import CachedAdd
from sriovop.cni.context import Node, require_env
from sriovop.cni.errors import DEVICE_FAILURE, CniError, why
from sriovop.cni.links import LinkError, index_of, rename
from sriovop.cni.netconf import check_pci, lookup
from sriovop.cni.server import CniRequest
from sriovop.cni.settle import restored_change, settle
from sriovop.cni.vfdevice import find_vf
from sriovop.host.netns_nofork import netlink_in


def cmd_del(node: Node, req: CniRequest, *, plugin: str = "sriov") -> list[str]:
    """Returns warnings (for stderr); raises CniError when the VF cannot be given back. `plugin` picks
    the state directory (sriov, ib-sriov)."""
    env = req.env
    require_env(env, "CNI_CONTAINERID", "CNI_IFNAME")
    cid, ifname = env["CNI_CONTAINERID"], env["CNI_IFNAME"]
    cache, allocs = sriov_dirs(node, plugin)
    raw = cache.load(cid, ifname)
    warnings: list[str] = []
    if raw is None:
        return warnings  # nothing of ours to undo (second DEL, node rebooted, ADD never finished)
    cached = CachedAdd.from_json(raw)
    pci = check_pci("deviceID", lookup(cached.netconf, "deviceID") or lookup(cached.netconf, "pciBusID"))
    ipam_type = (cached.netconf.get("ipam") or {}).get("type")
    with allocs.lock(pci):
        if ipam_type:
            ipam.run("DEL", str(ipam_type), req.stdin, env, node.cni_path_prefix)
        holder = allocs.holder(pci)
        if holder is not None and holder != env.get("CNI_NETNS"):
            # A late DEL of an old pod: the VF already belongs to another live pod; leave it alone.
            warnings.append(f"deviceID {pci} now belongs to netns {holder}; only this pod's cache was removed")
            cache.remove(cid, ifname)
            return warnings
        if not (node.root / "sys/bus/pci/devices" / pci).exists():
            warnings.append(f"deviceID {pci} no longer exists on this node; nothing to restore")
        else:
            _restore(node, req, cached, pci, ifname, warnings)
            fixed = settle(node, cached, find_vf(node.root, pci))
            if fixed:
                warnings.append(f"deviceID {pci}: re-applied after the restore: " + "; ".join(map(str, fixed)))
            if raw.get("GUID") and raw.get("OrigGUID"):
                vf = find_vf(node.root, pci)
                node.kernel.set_vf_guid(vf.pf_name, vf.pf_pci, vf.index, str(raw["OrigGUID"]))
        allocs.release(pci)
        cache.remove(cid, ifname)
    return warnings


def _restore(node: Node, req: CniRequest, cached: CachedAdd, pci: str, ifname: str, warnings: list[str]) -> None:
    vf = find_vf(node.root, pci)
    orig = cached.orig
    try:
        node.kernel.set_vf(vf.pf_name, vf.pf_pci, vf.index, restored_change(cached))
    except OSError as e:
        raise CniError(DEVICE_FAILURE, "cannot restore the VF's configuration", f"deviceID {pci}: {why(e)}") from e
    if cached.dpdk_mode or not orig.host_ifname:
        return
    if req.netns_fd is not None:
        pod = netlink_in(req.netns_fd)
        try:
            index = index_of(pod, ifname)
            if index is not None:
                try:
                    return_to_host(node, pod, index, orig)
                except LinkError as e:
                    raise CniError(DEVICE_FAILURE, "cannot return the VF to the host",
                                   f"deviceID {pci}: {why(e)}") from e
                return
        finally:
            pod.close()
    # The pod's namespace is gone (or the VF is no longer in it): the kernel returned the VF to the host.
    name = node.kernel.vf_netdev(node.root, pci)
    if name is None:
        raise CniError(DEVICE_FAILURE, "VF netdev not found",
                       f"deviceID {pci}: {ifname} is neither in the pod nor in the host namespace")
    with node.host_netlink() as (host, _fd):
        index = index_of(host, name)
        if index is None:
            raise CniError(DEVICE_FAILURE, "VF netdev not found", f"deviceID {pci}: {name} vanished")
        try:
            restore_netdev(host, index, orig)
            if name != orig.host_ifname:
                rename(host, index, orig.host_ifname, f"renaming {name} to {orig.host_ifname}")
        except LinkError as e:
            raise CniError(DEVICE_FAILURE, "cannot restore the VF in the host", f"deviceID {pci}: {why(e)}") from e
