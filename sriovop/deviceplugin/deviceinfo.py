"""Device-info files: how the device plugin tells the CNI (sriov-cni, via Multus) about a device.

The path and content are the network-attachment-definition client's (`pkg/utils/cniconfig.go`):
`<dir>/<prefix>-<resourceName>-<pci>-device.json` with every `/` of the resource name turned into `-`,
mode 0444, content `{"type":"pci","version":"1.1.0","pci":{"pci-address":...,"rdma-device":...}}`. A file
is written at Allocate (removed first: the client refuses to overwrite) and all of a resource's files are
removed when its server starts and stops.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sriovop.deviceplugin.devices import NetDevice

DEFAULT_DIR = "/var/run/k8s.cni.cncf.io/devinfo/dp"
SPEC_VERSION = "1.1.0"


def info_path(directory: Path, resource: str, pci: str) -> Path:
    return directory / f"{resource.replace('/', '-')}-{pci}-device.json"


def device_info(dev: NetDevice, rdma: bool) -> dict[str, object]:
    pci: dict[str, str] = {"pci-address": dev.pci}
    if rdma and dev.rdma_devices:
        pci["rdma-device"] = ",".join(dev.rdma_devices)
    return {"type": "pci", "version": SPEC_VERSION, "pci": pci}


def write_info(directory: Path, resource: str, dev: NetDevice, rdma: bool) -> Path:
    path = info_path(directory, resource, dev.pci)
    directory.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(device_info(dev, rdma)))
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)
    return path


def remove_infos(directory: Path, resource: str) -> int:
    """Remove every device-info file of `resource`; how many there were."""
    prefix = f"{resource.replace('/', '-')}-"
    removed = 0
    if directory.is_dir():
        for path in directory.glob(f"{prefix}*-device.json"):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
