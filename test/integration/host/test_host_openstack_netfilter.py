"""OpenStack netFilter discovery on the simulated SR-IOV host: the host's NICs stand in for the NICs Nova
passes into a VM, and the metadata comes from each source upstream reads (mounted config drive, the
config-2 filesystem mounted for the read, the metadata service over HTTP)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sriovop.host import Host
from sriovop.host.errors import DiscoveryError
from sriovop.host.openstack import METADATA_VERSION_DIR, OpenStackMetadata
from test.support.loopback_http import loopback_http
from test.support.openstack_vm import NET_A, NET_B, metadata, vm_like_host, write_mounted_config_drive


def _check(interfaces: list[dict[str, Any]], nics: list[dict[str, Any]]) -> None:
    by_pci = {i["pciAddress"]: i for i in interfaces}
    assert sorted(by_pci) == sorted([nics[0]["pciAddress"], nics[1]["pciAddress"]])  # NIC 2 is on no network
    a = by_pci[nics[0]["pciAddress"]]
    assert a["netFilter"] == f"openstack/NetworkID:{NET_A}"
    assert (a["totalvfs"], a["numVfs"], a["name"], a["mac"]) == (1, 1, nics[0]["name"], nics[0]["mac"])
    assert a["Vfs"] == [{k: v for k, v in {"name": a["name"], "mac": a["mac"], "driver": a.get("driver"),
                                            "pciAddress": a["pciAddress"], "vendor": a["vendor"],
                                            "deviceID": a["deviceID"], "mtu": a.get("mtu"), "vfID": 0}.items()
                         if v not in (None, "")}]
    assert by_pci[nics[1]["pciAddress"]]["netFilter"] == f"openstack/NetworkID:{NET_B}"


def test_mounted_config_drive(tmp_path: Path) -> None:
    with vm_like_host(tmp_path) as (sim, nics):
        base = write_mounted_config_drive(sim.root, *metadata(nics))
        with Host(sim.root, kernel=sim.access, platform="openstack") as host:
            interfaces = host.init()
        _check(interfaces, nics)
        # After the first start the checkpoint answers: the metadata is not needed again.
        for f in base.iterdir():
            f.unlink()
        with Host(sim.root, kernel=sim.access, platform="openstack") as host:
            _check(host.discover(), nics)


def test_config_drive_filesystem_is_mounted_read_and_unmounted(tmp_path: Path) -> None:
    with vm_like_host(tmp_path) as (sim, nics):
        meta, net = metadata(nics)
        content = tmp_path / "drive" / METADATA_VERSION_DIR
        content.mkdir(parents=True)
        (content / "meta_data.json").write_text(json.dumps(meta))
        (content / "network_data.json").write_text(json.dumps(net))
        image = tmp_path / "config-drive.img"
        subprocess.run(["truncate", "-s", "4M", str(image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "config-2", "-d", str(tmp_path / "drive"), str(image)],
                       check=True)
        label = sim.root / "dev/disk/by-label/config-2"
        label.parent.mkdir(parents=True)
        label.symlink_to(image)
        with Host(sim.root, kernel=sim.access, platform="openstack") as host:
            _check(host.discover(), nics)
    assert "sriov-configdrive" not in Path("/proc/mounts").read_text()


@contextmanager
def metadata_service(meta: dict[str, Any], net: dict[str, Any]) -> Iterator[str]:
    files = {f"/{METADATA_VERSION_DIR}/meta_data.json": meta, f"/{METADATA_VERSION_DIR}/network_data.json": net}

    def answer(path: str) -> tuple[int, bytes]:
        return (200, json.dumps(files[path]).encode()) if path in files else (404, b"not found")

    with loopback_http(answer) as (url, _):
        yield url


def test_metadata_service(tmp_path: Path) -> None:
    with vm_like_host(tmp_path) as (sim, nics), metadata_service(*metadata(nics)) as url:
        paths_host = Host(sim.root, kernel=sim.access)
        source = OpenStackMetadata(paths_host.paths, metadata_url=url)
        paths_host.close()
        with Host(sim.root, kernel=sim.access, platform="openstack", openstack=source) as host:
            _check(host.discover(), nics)


def test_no_source_is_a_discovery_error_naming_each(tmp_path: Path) -> None:
    with vm_like_host(tmp_path) as (sim, _nics):
        plain = Host(sim.root, kernel=sim.access)
        source = OpenStackMetadata(plain.paths, metadata_url="http://127.0.0.1:9", attempts=1)
        plain.close()
        with (Host(sim.root, kernel=sim.access, platform="openstack", openstack=source) as host,
              pytest.raises(DiscoveryError) as info):
            host.discover()
    assert "no OpenStack metadata" in str(info.value) and "service:" in str(info.value)
    assert "127.0.0.1:9" in str(info.value) or "Connection refused" in str(info.value)
