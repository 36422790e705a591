"""Allocate's answer for every kind of device (host: a small sysfs/dev tree under tmp_path, not the
simulator): kernel netdevice, vfio-pci (and no-IOMMU), uio, RDMA, vhost-net, CDI; env names and the
_INFO JSON as upstream spells them; device-info files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from sriovop.deviceplugin import allocate, cdi, deviceinfo
from sriovop.deviceplugin.config import parse_config
from sriovop.deviceplugin.devices import NetDevice
from sriovop.deviceplugin.pools import ResourcePool, build_pools
from sriovop.host.paths import HostPaths

VF = NetDevice(pci="0000:3b:02.0", vendor="8086", device="154c", driver="iavf", pf_name="ens1f0",
               pf_pci="0000:3b:00.0", vf_index=0, iommu_group="42")


def pool(devices: list[NetDevice], selector: dict[str, object] | None = None, name: str = "intel_sriov",
         **extra: object) -> ResourcePool:
    text = json.dumps({"resourceList": [{"resourceName": name, "selectors": [selector or {}], **extra}]})
    [built] = build_pools(parse_config(text, "openshift.io"), devices)
    return built


def specs(response: object) -> list[tuple[str, str, str]]:
    return [(d.host_path, d.container_path, d.permissions) for d in response.devices]  # type: ignore[attr-defined]


def test_kernel_netdevice(tmp_path: Path) -> None:
    paths = HostPaths.at(tmp_path)
    second = NetDevice(**{**VF.__dict__, "pci": "0000:3b:02.1", "vf_index": 1})
    p = pool([VF, second], additionalInfo={"*": {"token": "t"}, "0000:3b:02.1": {"token": "u", "x": "y"}})
    response = allocate.container_response(p, ["0000:3b:02.1", "0000:3b:02.0"], paths)
    assert specs(response) == [] and not response.mounts and not response.cdi_devices
    assert dict(response.envs)["PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV"] == "0000:3b:02.1,0000:3b:02.0"
    assert json.loads(response.envs["PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV_INFO"]) == {
        "0000:3b:02.0": {"generic": {"deviceID": "0000:3b:02.0"}, "extra": {"token": "t"}},
        "0000:3b:02.1": {"generic": {"deviceID": "0000:3b:02.1"}, "extra": {"token": "u", "x": "y"}},
    }


def test_vfio_pci(tmp_path: Path) -> None:
    dev = NetDevice(**{**VF.__dict__, "driver": "vfio-pci"})
    other = NetDevice(**{**dev.__dict__, "pci": "0000:3b:02.1", "iommu_group": "43"})
    response = allocate.container_response(pool([dev, other]), [dev.pci, other.pci], HostPaths.at(tmp_path))
    assert specs(response) == [("/dev/vfio/vfio", "/dev/vfio/vfio", "rw"), ("/dev/vfio/42", "/dev/vfio/42", "rw"),
                               ("/dev/vfio/43", "/dev/vfio/43", "rw")]
    info = json.loads(response.envs["PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV_INFO"])
    assert info[dev.pci]["vfio"] == {"mount": "/dev/vfio/vfio", "dev-mount": "/dev/vfio/42"}


def test_vfio_without_iommu(tmp_path: Path) -> None:
    (tmp_path / "dev/vfio").mkdir(parents=True)
    (tmp_path / "dev/vfio/noiommu-42").touch()
    dev = NetDevice(**{**VF.__dict__, "driver": "vfio-pci"})
    response = allocate.container_response(pool([dev]), [dev.pci], HostPaths.at(tmp_path))
    assert specs(response)[1] == ("/dev/vfio/noiommu-42", "/dev/vfio/42", "rw")


def test_uio(tmp_path: Path) -> None:
    (tmp_path / "sys/bus/pci/devices" / VF.pci / "uio/uio3").mkdir(parents=True)
    dev = NetDevice(**{**VF.__dict__, "driver": "igb_uio"})
    response = allocate.container_response(pool([dev]), [dev.pci], HostPaths.at(tmp_path))
    assert specs(response) == [("/dev/uio3", "/dev/uio3", "rw")]
    info = json.loads(response.envs["PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV_INFO"])
    assert info[dev.pci]["uio"] == {"mount": "/dev/uio3"}


def _rdma_tree(root: Path) -> None:
    for cls, entry, ibdev in (("infiniband_verbs", "uverbs2", "mlx5_2"), ("infiniband_verbs", "uverbs0", "mlx5_0"),
                              ("infiniband_mad", "umad2", "mlx5_2"), ("infiniband_mad", "issm2", "mlx5_2")):
        (root / "sys/class" / cls / entry).mkdir(parents=True)
        (root / "sys/class" / cls / entry / "ibdev").write_text(ibdev + "\n")


def test_rdma_only_when_the_selector_asks(tmp_path: Path) -> None:
    _rdma_tree(tmp_path)
    paths = HostPaths.at(tmp_path)
    dev = NetDevice(**{**VF.__dict__, "vendor": "15b3", "driver": "mlx5_core", "rdma_devices": ("mlx5_2",)})
    response = allocate.container_response(pool([dev], {"isRdma": True}), [dev.pci], paths)
    assert specs(response) == [(p, p, "rw") for p in ("/dev/infiniband/uverbs2", "/dev/infiniband/issm2",
                                                      "/dev/infiniband/umad2", "/dev/infiniband/rdma_cm")]
    info = json.loads(response.envs["PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV_INFO"])[dev.pci]
    assert info["rdma"] == {"uverbs": "/dev/infiniband/uverbs2", "umad": "/dev/infiniband/umad2",
                            "issm": "/dev/infiniband/issm2", "rdma_cm": "/dev/infiniband/rdma_cm", "rdma_dev": "mlx5_2"}
    assert specs(allocate.container_response(pool([dev]), [dev.pci], paths)) == []


def test_vhost_net(tmp_path: Path) -> None:
    paths = HostPaths.at(tmp_path)
    p = pool([VF], {"needVhostNet": True})
    assert specs(allocate.container_response(p, [VF.pci], paths)) == []  # the host has no /dev/vhost-net
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/vhost-net").touch()
    response = allocate.container_response(p, [VF.pci], paths)
    assert specs(response) == [("/dev/vhost-net", "/dev/vhost-net", "rw"), ("/dev/net/tun", "/dev/net/tun", "rw")]
    info = json.loads(response.envs["PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV_INFO"])[VF.pci]
    assert info["vhost"] == {"net-mount": "/dev/vhost-net", "tun-mount": "/dev/net/tun"}


def test_cdi(tmp_path: Path) -> None:
    paths = HostPaths.at(tmp_path)
    dev = NetDevice(**{**VF.__dict__, "driver": "vfio-pci"})
    p = pool([dev])
    response = allocate.container_response(p, [dev.pci], paths, use_cdi=True)
    assert [d.name for d in response.cdi_devices] == ["openshift.io/net-pci=0000:3b:02.0"]
    assert specs(response) == [] and "PCIDEVICE_OPENSHIFT_IO_INTEL_SRIOV" in response.envs
    path = cdi.write_spec(tmp_path / "cdi", p, paths)
    assert path.name == "sriov-dp-openshift.io-net-pci-intel_sriov.json"
    assert json.loads(path.read_text()) == {"cdiVersion": cdi.CDI_VERSION, "kind": "openshift.io/net-pci", "devices": [
        {"name": "0000:3b:02.0", "containerEdits": {"deviceNodes": [
            {"path": "/dev/vfio/vfio", "hostPath": "/dev/vfio/vfio", "permissions": "rw"},
            {"path": "/dev/vfio/42", "hostPath": "/dev/vfio/42", "permissions": "rw"}]}}]}
    cdi.remove_specs(tmp_path / "cdi")
    assert not path.exists()


def test_an_unknown_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(allocate.UnknownDeviceError) as info:
        allocate.container_response(pool([VF]), [VF.pci, "0000:99:00.0"], HostPaths.at(tmp_path))
    assert str(info.value) == "device 0000:99:00.0 is not in resource openshift.io/intel_sriov"


def test_device_info_files(tmp_path: Path) -> None:
    rdma_dev = NetDevice(**{**VF.__dict__, "rdma_devices": ("mlx5_2",)})
    path = deviceinfo.write_info(tmp_path, "openshift.io/intel_sriov", rdma_dev, rdma=True)
    assert path == tmp_path / "openshift.io-intel_sriov-0000:3b:02.0-device.json"
    assert json.loads(path.read_text()) == {"type": "pci", "version": "1.1.0",
                                            "pci": {"pci-address": "0000:3b:02.0", "rdma-device": "mlx5_2"}}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    path = deviceinfo.write_info(tmp_path, "openshift.io/intel_sriov", VF, rdma=False)  # again: replaced
    assert json.loads(path.read_text())["pci"] == {"pci-address": "0000:3b:02.0"}
    (tmp_path / "openshift.io-other-0000:3b:02.1-device.json").touch()
    assert deviceinfo.remove_infos(tmp_path, "openshift.io/intel_sriov") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["openshift.io-other-0000:3b:02.1-device.json"]
