"""A VM-like simulated host for OpenStack tests: its NICs stand in for the NICs Nova passes into a VM,
with matching Nova metadata (meta_data.json, network_data.json)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sriovop.host import Host
from sriovop.host.openstack import PREMOUNTED_DIR
from sriovop.sim.host import SimHost

NET_A = "3f1c2ad0-7bb4-4e4b-9d41-6a1e2c0f0a01"
NET_B = "8d7e6f54-1b2c-4d3e-8f9a-0b1c2d3e4f50"


def metadata(nics: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """NIC 0 listed by Nova with a wrong PCI hint; NIC 1 only in the links (vhost-user style); NIC 2 on no
    network."""
    a, b = nics[0], nics[1]
    meta = {"uuid": "vm", "devices": [{"type": "nic", "bus": "pci", "address": "0000:00:09.0",
                                       "mac": a["mac"].upper(), "tags": ["sriov"]}]}
    net = {"links": [{"id": "tap-a", "type": "hw_veb", "ethernet_mac_address": a["mac"]},
                     {"id": "tap-b", "type": "vhostuser", "ethernet_mac_address": b["mac"]}],
           "networks": [{"id": "network0", "type": "ipv4", "link": "tap-a", "network_id": NET_A},
                        {"id": "network1", "type": "ipv4", "link": "tap-b", "network_id": NET_B}]}
    return meta, net


@contextmanager
def vm_like_host(tmp_path: Path) -> Iterator[tuple[SimHost, list[dict[str, Any]]]]:
    with SimHost(tmp_path / "host", ["virtio:1", "82576:1", "xxv710:1"]) as sim:
        with Host(sim.root, kernel=sim.access) as bare:
            nics = all_nics(bare)
        yield sim, nics


def all_nics(host: Host) -> list[dict[str, Any]]:
    links = host.netlink.links()
    out = []
    for addr in sorted(p.name for p in host.paths.pci_devices.iterdir()):
        net = host.paths.device(addr) / "net"
        if net.is_dir() and not (host.paths.device(addr) / "physfn").exists():
            name = sorted(p.name for p in net.iterdir())[0]
            out.append({"pciAddress": addr, "name": name, "mac": links[name].mac})
    return out



def write_mounted_config_drive(root: Path, meta: dict[str, Any], net: dict[str, Any]) -> Path:
    base = root / PREMOUNTED_DIR
    base.mkdir(parents=True, exist_ok=True)
    (base / "meta_data.json").write_text(json.dumps(meta))
    (base / "network_data.json").write_text(json.dumps(net))
    return base
