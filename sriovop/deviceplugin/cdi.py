"""The CDI spec file written for `--use-cdi`: one device per PCI address, the same device nodes Allocate
would otherwise return, so that the container runtime (not the kubelet) adds them.

Kind `<prefix>/net-pci` and file name `sriov-dp-<prefix>-net-pci-<resourceName>.json` as upstream writes
them; Allocate then names the devices `<prefix>/net-pci=<pci>`. Files starting `sriov-dp-` are this
plugin's and are removed at start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sriovop.deviceplugin.allocate import CDI_KIND_CLASS as KIND_CLASS
from sriovop.deviceplugin.allocate import device_specs
from sriovop.deviceplugin.pools import ResourcePool
from sriovop.host.paths import HostPaths

DEFAULT_DIR = "/var/run/cdi"
CDI_VERSION = "0.6.0"
FILE_PREFIX = "sriov-dp-"


def kind(prefix: str) -> str:
    return f"{prefix}/{KIND_CLASS}"


def spec_path(directory: Path, pool: ResourcePool) -> Path:
    return directory / f"{FILE_PREFIX}{pool.config.prefix}-{KIND_CLASS}-{pool.config.resource_name}.json"


def spec(pool: ResourcePool, paths: HostPaths) -> dict[str, object]:
    devices = []
    for pci in pool.devices:
        nodes = [{"path": s.container_path, "hostPath": s.host_path, "permissions": s.permissions}
                 for s in device_specs(pool, [pci], paths)]
        devices.append({"name": pci, "containerEdits": {"deviceNodes": nodes}})
    return {"cdiVersion": CDI_VERSION, "kind": kind(pool.config.prefix), "devices": devices}


def write_spec(directory: Path, pool: ResourcePool, paths: HostPaths) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = spec_path(directory, pool)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(spec(pool, paths), indent=2))
    os.replace(tmp, path)
    return path


def remove_specs(directory: Path) -> None:
    if directory.is_dir():
        for path in directory.glob(f"{FILE_PREFIX}*"):
            path.unlink(missing_ok=True)
