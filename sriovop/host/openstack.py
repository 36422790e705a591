"""OpenStack: which Neutron network each passthrough NIC is on (`netFilter`), as upstream reads it.

A policy's `nicSelector.netFilter: openstack/NetworkID:<uuid>` selects the VFs Nova passed into this
VM on that network. The daemon reports each such device as a PF-like NodeState interface (totalvfs 1,
numVfs 1, one VF: itself) with `netFilter: openstack/NetworkID:<network_id>`.

Sources, in upstream's order (pkg/platform/openstack):
1. the config drive: a filesystem labelled `config-2` (`<root>/dev/disk/by-label/config-2`, else
   `blkid -t LABEL=config-2`), mounted read-only for the read and unmounted again; on hosts where it is
   already mounted, `<root>/var/config/openstack/2018-08-27/` (upstream's systemd-mode path);
2. the metadata service, `http://169.254.169.254/openstack/2018-08-27/{meta_data,network_data}.json`
   (retried; fails after about 10 s).
`meta_data.json` lists the devices (PCI address, MAC), `network_data.json` the links (MAC → link id) and
networks (link → network_id). Nova's PCI address is a hint only (libvirt cannot promise the guest sees
the address it asked for), so the device is found by its MAC; a NIC that is not in `devices` (e.g.
vhost-user) is matched to a link by its own MAC, as upstream does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import structlog
import tenacity

from sriovop.host.discovery import NETWORK_CLASS_PREFIX
from sriovop.host.paths import HostPaths
from sriovop.host.sysfs import listdir, read_str

log = structlog.get_logger(__name__)

NETWORK_ID_PREFIX: Final = "openstack/NetworkID"
METADATA_VERSION_DIR: Final = "openstack/2018-08-27"
PREMOUNTED_DIR: Final = "var/config/" + METADATA_VERSION_DIR
CONFIG_DRIVE_LABEL: Final = "config-2"
METADATA_URL: Final = "http://169.254.169.254"


class OpenStackMetadataError(OSError):
    """Neither the config drive nor the metadata service answered; the message says what was tried."""


@dataclass(frozen=True)
class DeviceInfo:
    mac: str
    net_filter: str


Fetch = Callable[[str], bytes]


def _http_get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return bytes(response.read())


class OpenStackMetadata:
    def __init__(self, paths: HostPaths, *, metadata_url: str = METADATA_URL, fetch: Fetch | None = None,
                 attempts: int = 3, mount_config_drive: bool = True) -> None:
        self.paths = paths
        self.metadata_url = metadata_url.rstrip("/")
        self.fetch = fetch or _http_get
        self.attempts = attempts
        self.mount_config_drive = mount_config_drive

    # -- reading ---------------------------------------------------------------------------------
    def read(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(meta_data, network_data), from the config drive, else the metadata service."""
        errors = []
        for source in (self._from_premounted, self._from_config_drive, self._from_service):
            try:
                found = source()
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                errors.append(f"{source.__name__.removeprefix('_from_')}: {exc}")
                continue
            if found is not None:
                return found
        raise OpenStackMetadataError("no OpenStack metadata: " + "; ".join(errors or ["no source answered"]))

    def _from_files(self, base: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        meta = json.loads((base / "meta_data.json").read_text())
        net = json.loads((base / "network_data.json").read_text())
        if not isinstance(meta, dict) or not isinstance(net, dict):
            raise ValueError(f"{base}: meta_data.json and network_data.json must be JSON objects")
        return meta, net

    def _from_premounted(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        base = self.paths.under(PREMOUNTED_DIR)
        if not (base / "meta_data.json").exists():
            return None
        log.info("reading OpenStack metadata from the mounted config drive", path=str(base))
        return self._from_files(base)

    def _config_drive_device(self) -> str | None:
        by_label = self.paths.under(f"dev/disk/by-label/{CONFIG_DRIVE_LABEL}")
        if by_label.exists():
            return str(by_label)
        if self.paths.root != Path("/") or not shutil.which("blkid"):
            return None
        done = subprocess.run(["blkid", "-l", "-t", f"LABEL={CONFIG_DRIVE_LABEL}", "-o", "device"],
                              capture_output=True, text=True, timeout=30, check=False)
        return done.stdout.strip() or None

    def _from_config_drive(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        if not self.mount_config_drive:
            return None
        device = self._config_drive_device()
        if device is None:
            return None
        mountpoint = Path(tempfile.mkdtemp(prefix="sriov-configdrive-"))
        try:
            subprocess.run(["mount", "-o", "ro", "-t", "auto", device, str(mountpoint)], check=True,
                           capture_output=True, text=True, timeout=60)
            try:
                log.info("reading OpenStack metadata from the config drive", device=device)
                return self._from_files(mountpoint / METADATA_VERSION_DIR)
            finally:
                subprocess.run(["umount", str(mountpoint)], check=False, capture_output=True, timeout=60)
        except subprocess.CalledProcessError as exc:
            raise OSError(f"mounting config drive {device}: {exc.stderr.strip() or exc}") from exc
        finally:
            os.rmdir(mountpoint)

    def _from_service(self) -> tuple[dict[str, Any], dict[str, Any]]:
        retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(self.attempts),
                                     wait=tenacity.wait_exponential(multiplier=0.5, max=4),
                                     retry=tenacity.retry_if_exception_type(OSError), reraise=True)
        base = f"{self.metadata_url}/{METADATA_VERSION_DIR}"
        log.info("reading OpenStack metadata from the metadata service", url=base)
        meta = json.loads(retrying(self.fetch, f"{base}/meta_data.json"))
        net = json.loads(retrying(self.fetch, f"{base}/network_data.json"))
        if not isinstance(meta, dict) or not isinstance(net, dict):
            raise ValueError(f"{base}: meta_data.json and network_data.json must be JSON objects")
        return meta, net

    # -- mapping ---------------------------------------------------------------------------------
    def devices_info(self, macs: dict[str, str]) -> dict[str, DeviceInfo]:
        """PCI address → (MAC, netFilter) for every NIC on a Neutron network; `macs` is this host's
        PCI address → MAC of its network devices (`netdev_macs`)."""
        meta, net = self.read()
        return devices_info(meta, net, macs)


def netdev_macs(paths: HostPaths, netlink_macs: dict[str, str]) -> dict[str, str]:
    """PCI address → MAC (lower case) of the network-class devices with a netdev; `netlink_macs` (netdev
    name → MAC, from a netlink dump) wins over sysfs, which lacks netdevs of other namespaces' devices."""
    out = {}
    for addr in listdir(paths.pci_devices):
        dev = paths.device(addr)
        if not (read_str(dev / "class") or "").startswith(NETWORK_CLASS_PREFIX):
            continue
        for name in listdir(dev / "net"):
            mac = (netlink_macs.get(name) or read_str(dev / "net" / name / "address") or "").lower()
            if mac:
                out[addr] = mac
                break
    return out


def _network_of(mac: str, net: dict[str, Any]) -> str | None:
    for link in net.get("links") or []:
        if isinstance(link, dict) and str(link.get("ethernet_mac_address") or "").lower() == mac:
            for network in net.get("networks") or []:
                if isinstance(network, dict) and network.get("link") == link.get("id") and network.get("network_id"):
                    return f"{NETWORK_ID_PREFIX}:{network['network_id']}"
    return None


def devices_info(meta: dict[str, Any], net: dict[str, Any], macs: dict[str, str]) -> dict[str, DeviceInfo]:
    by_mac: dict[str, list[str]] = {}
    for addr, mac in macs.items():
        by_mac.setdefault(mac, []).append(addr)
    out: dict[str, DeviceInfo] = {}
    for device in meta.get("devices") or []:
        if not isinstance(device, dict):
            continue
        mac = str(device.get("mac") or "").lower()
        network = _network_of(mac, net) if mac else None
        if network is None:
            continue
        addr = str(device.get("address") or "")
        found = by_mac.get(mac) or []
        if len(found) == 1:
            addr = found[0]  # the guest's own view wins over Nova's hint
        elif len(found) > 1:
            log.warning("several NICs have the same MAC; keeping Nova's PCI address", mac=mac, pcis=found)
        if addr:
            out[addr] = DeviceInfo(mac, network)
    for addr, mac in macs.items():  # NICs Nova does not list as devices (vhost-user): by their own MAC
        if addr not in out and (network := _network_of(mac, net)) is not None:
            out[addr] = DeviceInfo(mac, network)
    return out
