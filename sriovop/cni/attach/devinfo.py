"""Device-info files (the k8snetworkplumbingwg device-info spec), how the device plugin hands a
device's details to the CNI plugin and on to the pod's network-status.

- `<base>/dp/<resource>-<deviceID>-device.json`: written by the device plugin per device ('/' → '-').
- `<base>/cni/<ns>-<nad>-<containerID>_<ifname>`: this plugin's copy for one attachment, passed to the
  delegate as the `CNIDeviceInfoFile` capability; read back after ADD for network-status; removed on DEL.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import structlog

DEFAULT_BASE: Final = "/var/run/k8s.cni.cncf.io/devinfo"

log = structlog.get_logger("cni.attach")


def dp_path(base: Path, resource_name: str, device_id: str) -> Path:
    return base / "dp" / f"{resource_name.replace('/', '-')}-{device_id.replace('/', '-')}-device.json"


def cni_path(base: Path, network: str, container_id: str, ifname: str) -> Path:
    """`network` is `ns/nad`; Multus names the copy `<network>-<containerID>_<ifname>` with '/' → '-'."""
    return base / "cni" / f"{network}-{container_id}_{ifname}".replace("/", "-")


def load(path: Path) -> dict[str, Any] | None:
    """The device info in a file, or None when there is none (the device plugin may not write one)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("unreadable device-info file", path=str(path), error=str(exc))
        return None
    return data if isinstance(data, dict) else None


def copy_from_dp(base: Path, resource_name: str, device_id: str, target: Path) -> bool:
    """Copy the device plugin's file for this device to the attachment's path; False when the device
    plugin wrote none (not an error: Multus goes on without device-info)."""
    info = load(dp_path(base, resource_name, device_id))
    if info is None:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(info))
    os.chmod(tmp, 0o444)
    tmp.replace(target)
    return True


def remove(path: Path) -> None:
    path.unlink(missing_ok=True)
