"""`sriov` ADD: give a VF to a pod.

Order (upstream's): lock the VF, refuse it if another live pod holds it, capture its state, set the
PF-side attributes, move the netdev into the pod under the requested name, set its MAC, bring it up,
run IPAM and apply the addresses, cache everything DEL needs, record the allocation. A failure at any
step undoes the steps before it, so the VF is left exactly as it was found.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from sriovop.cni import ipam, result
from sriovop.cni.alloc import Allocations
from sriovop.cni.cache import Cache, CachedAdd, OrigVfState
from sriovop.cni.context import Node, require_env
from sriovop.cni.errors import DEVICE_FAILURE, INVALID_ENV, CniError, why
from sriovop.cni.links import (
    TRANSIENT_MAC,
    LinkError,
    call,
    index_of,
    move,
    rename,
    set_mac,
    temp_name,
)
from sriovop.cni.netconf import NetConf
from sriovop.cni.rtnl import Link, rtnl_in
from sriovop.cni.server import CniRequest
from sriovop.cni.vfdevice import VfDevice, find_vf, vf_guid
from sriovop.cni.vfstate import undo, wanted
from sriovop.host.netns_nofork import netlink_in


def sriov_dirs(node: Node, plugin: str = "sriov") -> tuple[Cache, Allocations]:
    """`<state>/<plugin>`: caches; its `pci/`: allocation files and locks (upstream's layout)."""
    data = node.state_dir / plugin
    return Cache(data), Allocations(data, node.netns_root)


def cmd_add(node: Node, req: CniRequest, conf: NetConf, *, plugin: str = "sriov",
            guid: str | None = None) -> dict[str, Any]:
    """ADD; `plugin` picks the state directory, `guid` (ib-sriov) is set on the VF through its PF."""
    env = req.env
    require_env(env, "CNI_CONTAINERID", "CNI_IFNAME", "CNI_NETNS")
    if req.netns_fd is None:
        raise CniError(INVALID_ENV, "cannot open the pod's network namespace",
                       f"CNI_NETNS: {env['CNI_NETNS']} could not be opened by the plugin")
    vf = find_vf(node.root, conf.device_id)
    cache, allocs = sriov_dirs(node, plugin)
    with allocs.lock(vf.pci):
        holder = allocs.holder(vf.pci)
        if holder is not None:
            raise CniError(DEVICE_FAILURE, "VF already allocated",
                           f"deviceID {vf.pci}: already allocated to the pod with netns {holder}")
        return _add_locked(node, req, conf, vf, cache, allocs, guid)


def _add_locked(node: Node, req: CniRequest, conf: NetConf, vf: VfDevice, cache: Cache,
                allocs: Allocations, guid: str | None) -> dict[str, Any]:
    env = req.env
    ifname = env["CNI_IFNAME"]
    assert req.netns_fd is not None
    netdev = node.kernel.vf_netdev(node.root, vf.pci)
    dpdk = netdev is None
    if dpdk and not vf.dpdk:
        raise CniError(DEVICE_FAILURE, "VF has no netdev",
                       f"deviceID {vf.pci}: no network device and driver {vf.driver or 'none'} is not a DPDK driver")
    try:
        config = node.kernel.vf_config(vf.pf_name, vf.pf_pci, vf.index)
    except OSError as e:
        raise CniError(DEVICE_FAILURE, "cannot read the VF's state", f"deviceID {vf.pci}: {why(e)}") from e
    undo_steps: list[Callable[[], None]] = []
    change = wanted(conf)
    orig = OrigVfState(host_ifname=netdev or "", config=config)
    mac = conf.mac or ""
    ipam_result: dict[str, Any] | None = None
    #: Runs first when undoing, before the netdev moves back, in DEL's order (some drivers, e.g. igb,
    #: refuse a VF's own MAC while the PF holds another one for it).
    pf_undo: list[Callable[[], None]] = []
    try:
        pf_undo.append(lambda: node.kernel.set_vf(vf.pf_name, vf.pf_pci, vf.index, undo(config, change)))
        try:
            node.kernel.set_vf(vf.pf_name, vf.pf_pci, vf.index, change)
        except OSError as e:
            raise CniError(DEVICE_FAILURE, "VF configuration refused", f"deviceID {vf.pci}: {why(e)}") from e
        orig_guid = vf_guid(node.root, vf.pci)
        if guid is not None:
            if orig_guid:
                undo_steps.append(lambda: node.kernel.set_vf_guid(vf.pf_name, vf.pf_pci, vf.index, orig_guid))
            try:
                node.kernel.set_vf_guid(vf.pf_name, vf.pf_pci, vf.index, guid)
            except OSError as e:
                raise CniError(DEVICE_FAILURE, "GUID refused", f"guid {guid} on deviceID {vf.pci}: {why(e)}") from e
        if netdev is not None:
            mac = _move_in(node, req, vf, netdev, ifname, conf, orig, undo_steps)
        elif config.admin_mac != "00:00:00:00:00:00" and not mac:
            mac = config.admin_mac
        if conf.ipam_type:
            ipam_type = conf.ipam_type
            undo_steps.append(lambda: _ipam_del(ipam_type, req, node))
            ipam_result = ipam.run("ADD", ipam_type, req.stdin, env, node.cni_path_prefix)
            if not ipam_result or not ipam_result.get("ips"):
                raise CniError(DEVICE_FAILURE, "IPAM returned no IP", f"ipam.type {ipam_type}: no ips in its result")
            if not dpdk:
                _apply_ips(req.netns_fd, ifname, ipam_result)
        cached = CachedAdd(netconf=conf.raw, orig=orig, master=vf.pf_name, vf_index=vf.index, mac=conf.mac or "",
                           dpdk_mode=dpdk)
        data = cached.to_json()
        if guid is not None:
            data.update(GUID=guid, OrigGUID=orig_guid)
        cache.save(env["CNI_CONTAINERID"], ifname, data)
        undo_steps.append(lambda: cache.remove(env["CNI_CONTAINERID"], ifname))
        allocs.save(vf.pci, env["CNI_NETNS"])
    except BaseException:
        for step in [*pf_undo, *reversed(undo_steps)]:
            try:
                step()
            except Exception:  # keep undoing the rest; the original error is what the runtime needs
                pass
        raise
    iface = result.interface(ifname, mac, env["CNI_NETNS"], vf.pci, conf.cni_version)
    return result.build(conf.cni_version, iface, ipam_result)


def _move_in(node: Node, req: CniRequest, vf: VfDevice, netdev: str, ifname: str, conf: NetConf,
             orig: OrigVfState, undo_steps: list[Callable[[], None]]) -> str:
    """Move the VF netdev into the pod as `ifname`, set its MAC, bring it up; returns its MAC.

    Two rtnetlink requests when nothing is refused (`sriovop.cni.rtnl`): read the VF in the host, then
    one RTM_SETLINK that does the rest. The kernel applies it in a fixed order and stops at the first
    refusal: into the pod (down as it leaves, keeping its ifindex: IFLA_NEW_IFINDEX makes a clash
    refuse the move instead of renumbering), MAC (left out when it already is the wanted one), name,
    up. On a refusal the VF is found by that index — still in the host: moved again through a unique
    temporary name with the index left to the kernel; in the pod: whatever is not done yet is done
    step by step as upstream does (name, MAC retried while the driver resets after the PF's new admin
    MAC, up) when the MAC was refused, else the refusal is the error."""
    assert req.netns_fd is not None
    mac = conf.mac or ""
    with node.host_rtnl() as (host, _host_fd):
        before = host.link(netdev)
        if before is None:
            raise CniError(DEVICE_FAILURE, "VF netdev not found",
                           f"deviceID {vf.pci}: netdev {netdev} is not in the host namespace")
        orig.effective_mac, orig.mtu = before.mac, before.mtu
        # The VF's current name, wherever it is: the undo must find the VF, never a namesake.
        current = [netdev]
        undo_steps.append(lambda: _move_back(node, req.netns_fd, current[0], orig, before.up))
        refused: NetlinkError | None = None
        temp = ""
        try:
            if ifname in before.altnames:
                _rtnl(f"removing altname {ifname}", host.del_altname, before.index, ifname)
            try:
                host.set_link(before.index, net_ns_fd=req.netns_fd, new_ifindex=before.index,
                              address=mac if mac and mac.lower() != before.mac else None, ifname=ifname, up=True)
                current[0] = ifname
                return mac or before.mac
            except NetlinkError as e:
                refused = e
            still = host.link(index=before.index)
            if still is not None and still.name == netdev:
                # Not moved (e.g. its index is taken in the pod); a name sent with a move is applied
                # after it, and a unique one cannot clash in the pod.
                temp = temp_name()
                current[0] = temp
                refused = None
                _rtnl(f"moving {netdev} into the pod", host.set_link, before.index, up=False,
                      net_ns_fd=req.netns_fd, ifname=temp)
        except LinkError as e:
            raise CniError(DEVICE_FAILURE, "cannot move the VF into the pod", f"deviceID {vf.pci}: {why(e)}") from e
    pod = rtnl_in(req.netns_fd)
    try:
        now = pod.link(temp) if temp else pod.link(index=before.index)
    finally:
        pod.close()
    if now is None or not (temp or now.name in (netdev, ifname)):
        raise CniError(DEVICE_FAILURE, "VF vanished",
                       f"deviceID {vf.pci}: {temp or netdev} is not in the pod after the move")
    current[0] = now.name
    try:
        _finish_in_pod(req.netns_fd, now, netdev, ifname, mac, refused, current)
    except LinkError as e:
        raise CniError(DEVICE_FAILURE, "cannot set up the VF in the pod", f"deviceID {vf.pci}: {why(e)}") from e
    return mac or before.mac


def _finish_in_pod(pod_fd: int, now: Link, netdev: str, ifname: str, mac: str, refused: NetlinkError | None,
                   current: list[str]) -> None:
    """After a move that did not finish: name, MAC and up one request each (the MAC retried while the
    driver is busy). A refusal of anything but the MAC is the error; `current` follows the VF's name."""
    if refused is not None and not (mac and refused.code in TRANSIENT_MAC and now.mac != mac.lower()):
        if refused.code == errno.EEXIST:
            raise LinkError(refused.code, f"naming the VF {ifname} in the pod: an interface named {ifname} "
                                          "already exists there") from refused
        raise LinkError(refused.code, f"setting up {ifname} in the pod: {os.strerror(refused.code)}") from refused
    ipr = netlink_in(pod_fd)
    try:
        if netdev in now.altnames:  # a kernel/udev that kept the host name as an altname
            call(ipr, f"removing altname {netdev}", "property_del", index=now.index, altname=netdev)
        if now.name != ifname:
            rename(ipr, now.index, ifname, f"naming the VF {ifname} in the pod")
            current[0] = ifname
        if mac:
            set_mac(ipr, now.index, mac, f"setting MAC {mac} on {ifname}")
        call(ipr, f"bringing {ifname} up", "set", index=now.index, state="up")
    finally:
        ipr.close()


def _rtnl(what: str, fn: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    """Run one rtnetlink request; a refusal is a LinkError saying what was being done."""
    try:
        fn(*args, **kwargs)
    except NetlinkError as e:
        raise LinkError(e.code, f"{what}: {os.strerror(e.code)}") from e


def _move_back(node: Node, pod_fd: int | None, name: str, orig: OrigVfState, up: bool) -> None:
    """Undo `_move_in` from wherever it stopped (the VF is called `name`, in the pod or still in the
    host): back in the host, named, addressed and up as it was."""
    pod = netlink_in(pod_fd)
    try:
        index = index_of(pod, name)
        if index is not None:
            return_to_host(node, pod, index, orig, up=up)
            return
    finally:
        pod.close()
    with node.host_netlink() as (host, _fd):
        for candidate in (name, orig.host_ifname):  # the move itself failed: still in the host
            index = index_of(host, candidate)
            if index is not None:
                restore_netdev(host, index, orig)
                if candidate != orig.host_ifname:
                    rename(host, index, orig.host_ifname, f"renaming {candidate} back to {orig.host_ifname}")
                if up:
                    call(host, f"{orig.host_ifname} up", "set", index=index, state="up")
                return


def return_to_host(node: Node, pod: IPRoute, index: int, orig: OrigVfState, *, up: bool = False) -> None:
    """From the pod: link down, effective MAC and MTU back, into the host namespace under its host name."""
    restore_netdev(pod, index, orig)
    temp = temp_name()
    rename(pod, index, temp, f"renaming the VF to {temp} in the pod")
    with node.host_netlink() as (host, host_fd):
        move(pod, index, host_fd, "returning the VF to the host")
        back = index_of(host, temp)
        if back is None:
            raise LinkError(errno.ENODEV, f"{temp} did not arrive in the host namespace")
        rename(host, back, orig.host_ifname, f"renaming {temp} back to {orig.host_ifname}")
        if up:
            call(host, f"{orig.host_ifname} up", "set", index=back, state="up")


def restore_netdev(ipr: IPRoute, index: int, orig: OrigVfState) -> None:
    """Link down, effective MAC and MTU as captured (before the name changes back)."""
    call(ipr, "link down", "set", index=index, state="down")
    if orig.effective_mac:
        set_mac(ipr, index, orig.effective_mac, f"restoring MAC {orig.effective_mac}")
    if orig.mtu:
        call(ipr, f"restoring MTU {orig.mtu}", "set", index=index, mtu=orig.mtu)


def _ipam_del(ipam_type: str, req: CniRequest, node: Node) -> None:
    ipam.run("DEL", ipam_type, req.stdin, req.env, node.cni_path_prefix)


def _apply_ips(pod_fd: int, ifname: str, ipam_result: dict[str, Any]) -> None:
    import ipaddress

    pod = netlink_in(pod_fd)
    try:
        index = index_of(pod, ifname)
        for ip in ipam_result.get("ips") or []:
            iface = ipaddress.ip_interface(ip["address"])
            try:
                pod.addr("add", index=index, address=str(iface.ip), prefixlen=iface.network.prefixlen)
            except NetlinkError as e:
                raise CniError(DEVICE_FAILURE, "cannot add the IPAM address", f"{ip['address']} on {ifname}: {e}") \
                    from e
        for route in ipam_result.get("routes") or []:
            dst = route.get("dst")
            gw = route.get("gw") or next((ip.get("gateway") for ip in ipam_result.get("ips") or []
                                          if ip.get("gateway")), None)
            try:
                pod.route("add", dst=dst, gateway=gw, oif=index)
            except NetlinkError as e:
                raise CniError(DEVICE_FAILURE, "cannot add the IPAM route", f"route {dst} via {gw}: {e}") from e
    finally:
        pod.close()
