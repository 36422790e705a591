"""One container's AllocateResponse, as upstream's resource server builds it.

- env `PCIDEVICE_<PREFIX>_<NAME>` (dots to underscores, upper case) = the allocated PCI addresses joined by
  commas, and `..._INFO` = JSON `{pci: {"generic": {"deviceID"}, "vfio"|"uio"|"rdma"|"vhost"|"extra": {...}}}`;
- device specs (deduplicated by host path, permissions rw): `/dev/vfio/vfio` and `/dev/vfio/<group>` for
  vfio-pci (`noiommu-<group>` on the host when the group has no IOMMU), `/dev/uioN` for uio drivers, the
  RDMA character devices when the claiming selector has `isRdma`, `/dev/vhost-net` and `/dev/net/tun` when
  it has `needVhostNet` (and the host has /dev/vhost-net); nothing for a kernel netdevice;
- with CDI, the same device nodes come from the CDI spec (cdi.py) and the response names CDI devices.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from sriovop.deviceplugin import rdma
from sriovop.deviceplugin.devices import NetDevice
from sriovop.deviceplugin.pools import ResourcePool
from sriovop.host.paths import HostPaths
from sriovop.host.sysfs import listdir
from sriovop.kubelet import deviceplugin_v1beta1_pb2 as pb

VFIO_DRIVER = "vfio-pci"
UIO_DRIVERS = ("uio", "igb_uio")
VFIO_CONTAINER = "/dev/vfio/vfio"
VHOST_NET = "/dev/vhost-net"
TUN = "/dev/net/tun"
CDI_KIND_CLASS = "net-pci"


class UnknownDeviceError(LookupError):
    """The kubelet asked for a device ID this resource does not have."""


def env_key(prefix: str, resource_name: str) -> str:
    return f"PCIDEVICE_{prefix}_{resource_name}".replace(".", "_").upper()


def _vfio_file(paths: HostPaths, group: str) -> tuple[str, str]:
    """(host path, container path) of a VFIO group's device file."""
    if (paths.root / "dev/vfio" / f"noiommu-{group}").exists():
        return f"/dev/vfio/noiommu-{group}", f"/dev/vfio/{group}"
    return f"/dev/vfio/{group}", f"/dev/vfio/{group}"


def _uio_file(paths: HostPaths, pci: str) -> str:
    names = listdir(paths.device(pci) / "uio")
    return f"/dev/{names[0]}" if names else ""


def _vhost_available(paths: HostPaths) -> bool:
    return (paths.root / VHOST_NET.lstrip("/")).exists()


def _device(pool: ResourcePool, pci: str) -> NetDevice:
    try:
        return pool.devices[pci]
    except KeyError:
        raise UnknownDeviceError(f"device {pci} is not in resource {pool.name}") from None


def device_specs(pool: ResourcePool, ids: Sequence[str], paths: HostPaths) -> list[pb.DeviceSpec]:
    out: dict[str, pb.DeviceSpec] = {}

    def add(host: str, container: str | None = None) -> None:
        if host and host not in out:
            out[host] = pb.DeviceSpec(host_path=host, container_path=container or host, permissions="rw")

    for pci in ids:
        dev = _device(pool, pci)
        selector = pool.claimed_by[pci]
        if dev.driver == VFIO_DRIVER:
            add(VFIO_CONTAINER)
            if dev.iommu_group:
                add(*_vfio_file(paths, dev.iommu_group))
        elif dev.driver in UIO_DRIVERS:
            add(_uio_file(paths, pci))
        if selector.is_rdma:
            for rdma_dev in dev.rdma_devices:
                for char in rdma.char_devices(paths, rdma_dev):
                    add(char)
        if selector.need_vhost_net and _vhost_available(paths):
            add(VHOST_NET)
            add(TUN)
    return list(out.values())


def _info(pool: ResourcePool, pci: str, paths: HostPaths) -> dict[str, dict[str, str]]:
    dev = pool.devices[pci]
    selector = pool.claimed_by[pci]
    info: dict[str, dict[str, str]] = {"generic": {"deviceID": pci}}
    if dev.driver == VFIO_DRIVER:
        info["vfio"] = {"mount": VFIO_CONTAINER}
        if dev.iommu_group:
            info["vfio"]["dev-mount"] = _vfio_file(paths, dev.iommu_group)[1]
    elif dev.driver in UIO_DRIVERS:
        info["uio"] = {"mount": _uio_file(paths, pci)}
    if selector.is_rdma and dev.rdma_devices:
        chars = rdma.char_devices(paths, dev.rdma_devices[0])
        rdma_info = {key: path for path in chars for key in ("uverbs", "umad", "issm", "rdma_cm") if key in path}
        info["rdma"] = {**rdma_info, "rdma_dev": dev.rdma_devices[0]}
    if selector.need_vhost_net and _vhost_available(paths):
        info["vhost"] = {"net-mount": VHOST_NET, "tun-mount": TUN}
    extra = {**pool.config.additional_info.get("*", {}), **pool.config.additional_info.get(pci, {})}
    if extra:
        info["extra"] = extra
    return info


def envs(pool: ResourcePool, ids: Sequence[str], paths: HostPaths) -> dict[str, str]:
    for pci in ids:
        _device(pool, pci)
    key = env_key(pool.config.prefix, pool.config.resource_name)
    infos = {pci: _info(pool, pci, paths) for pci in ids}
    return {key: ",".join(ids), f"{key}_INFO": json.dumps(infos, sort_keys=True, separators=(",", ":"))}


def cdi_name(prefix: str, pci: str) -> str:
    return f"{prefix}/{CDI_KIND_CLASS}={pci}"


def container_response(pool: ResourcePool, ids: Sequence[str], paths: HostPaths,
                       use_cdi: bool = False) -> pb.ContainerAllocateResponse:
    """Raises UnknownDeviceError for an ID outside the pool (nothing is half-built)."""
    response = pb.ContainerAllocateResponse(envs=envs(pool, ids, paths))
    if use_cdi:
        response.cdi_devices.extend(pb.CDIDevice(name=cdi_name(pool.config.prefix, pci)) for pci in ids)
    else:
        response.devices.extend(device_specs(pool, ids, paths))
    return response
