"""The files of the systemd configuration mode (`configurationMode: systemd`), where upstream keeps them.

The config daemon (pod) writes, and the host's systemd services read at boot, before NetworkManager and
kubelet run:
- `/etc/sriov-operator/sriov-interface-config.yaml`: the NodeState spec to apply, with `unsupportedNics`
  (dev mode), `platformType`, `manageSoftwareBridges` and `ovsdbSocketPath` (upstream's keys);
- `/etc/sriov-operator/sriov-supported-nics-ids.yaml`: the supported-NIC list, one `vendor pf vf` per line;
- `/etc/sriov-operator/sriov-interface-result.yaml`: written by the services (`syncStatus`,
  `lastSyncError`; the pre phase leaves `InProgress`, the post phase `Succeeded` or `Failed`);
- `/etc/systemd/system/sriov-config.service` (`--phase pre`: after network-pre, before NetworkManager,
  systemd-networkd and kubelet) and `sriov-config-post-network.service` (`--phase post`: after the network
  is online and Open vSwitch, before kubelet), enabled through `multi-user.target.wants` symlinks;
- `/var/lib/sriov/sriovop`: what the units run. Upstream copies its static binary there; sriovop is Python,
  so the daemon copies the pure-Python packages the service phases need to `/var/lib/sriov/python` and
  writes a launcher that runs them with the host's `python3` (3.11 or newer).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sriovop.api.v1.supportednics import SupportedNics
from sriovop.host.paths import HostPaths

CONFIG_REL = "etc/sriov-operator/sriov-interface-config.yaml"
RESULT_REL = "etc/sriov-operator/sriov-interface-result.yaml"
SUPPORTED_NICS_REL = "etc/sriov-operator/sriov-supported-nics-ids.yaml"
UNIT_DIR_REL = "etc/systemd/system"
WANTS_REL = "etc/systemd/system/multi-user.target.wants"
PRE_UNIT = "sriov-config.service"
POST_UNIT = "sriov-config-post-network.service"
LAUNCHER_REL = "var/lib/sriov/sriovop"
LIBDIR_REL = "var/lib/sriov/python"
#: Packages the service phases import (no kubernetes client: the services never talk to the API).
SERVICE_PACKAGES = ("sriovop", "click", "structlog", "tenacity", "pyroute2", "yaml", "prometheus_client")

def _unit(when: str, ordering: str, phase: str) -> str:
    return (f"[Unit]\nDescription=Configures SR-IOV NICs (sriovop, {when} the network is configured)\n{ordering}\n\n"
            f"[Service]\nType=oneshot\nExecStart=/{LAUNCHER_REL} config-daemon service --phase {phase}\n"
            "StandardOutput=journal+console\n\n[Install]\nWantedBy=multi-user.target\n")


PRE_UNIT_TEXT = _unit("before", "Wants=network-pre.target\nAfter=network-pre.target\n"
                      "Before=NetworkManager.service systemd-networkd.service network.target kubelet.service", "pre")
POST_UNIT_TEXT = _unit("after", "After=systemd-networkd-wait-online.service NetworkManager-wait-online.service "
                       "openvswitch-switch.service\nBefore=kubelet.service", "post")

LAUNCHER_TEXT = f"""\
#!/bin/sh
# Installed by the sriovop config daemon (configurationMode: systemd); run by {PRE_UNIT} and {POST_UNIT}.
export PYTHONPATH=/{LIBDIR_REL}
exec python3 -m sriovop.cli "$@"
"""


@dataclass(frozen=True)
class Result:
    sync_status: str
    last_sync_error: str = ""


class SystemdFiles:
    def __init__(self, paths: HostPaths) -> None:
        self.paths = paths
        self.config = paths.under(CONFIG_REL)
        self.result_path = paths.under(RESULT_REL)
        self.supported_nics = paths.under(SUPPORTED_NICS_REL)
        self.units = {PRE_UNIT: PRE_UNIT_TEXT, POST_UNIT: POST_UNIT_TEXT}

    # --- configuration --------------------------------------------------------------------------
    def write_config(self, spec: dict[str, Any], *, unsupported_nics: bool, platform: str,
                     manage_software_bridges: bool, ovsdb_socket: str) -> bool:
        """Write the config file; True when its content changed (a new file with an empty spec is not a
        change, as upstream: a fresh install must not reboot the node)."""
        content = yaml.safe_dump({"spec": spec, "unsupportedNics": unsupported_nics, "platformType": platform,
                                  "manageSoftwareBridges": manage_software_bridges, "ovsdbSocketPath": ovsdb_socket},
                                 sort_keys=True)
        existed = self.config.exists()
        if existed and self.config.read_text() == content:
            return False
        _atomic(self.config, content)
        return existed or bool(spec.get("interfaces"))

    def read_config(self) -> dict[str, Any]:
        """The config file; a missing file means an empty spec on bare metal (upstream's default)."""
        try:
            data = yaml.safe_load(self.config.read_text())
        except FileNotFoundError:
            return {"spec": {}, "unsupportedNics": False, "platformType": "baremetal",
                    "manageSoftwareBridges": False, "ovsdbSocketPath": ""}
        if not isinstance(data, dict):
            raise ValueError(f"{CONFIG_REL}: not a YAML mapping")
        return data

    def write_supported_nics(self, nics: SupportedNics) -> None:
        _atomic(self.supported_nics, "".join(f"{m.vendor} {m.pf_device} {m.vf_device}\n" for m in nics))

    def read_supported_nics(self) -> SupportedNics:
        lines = [ln.strip() for ln in self.supported_nics.read_text().splitlines() if ln.strip()]
        return SupportedNics.from_configmap_data({f"line{i}": ln for i, ln in enumerate(lines)}, strict=True)

    # --- result ---------------------------------------------------------------------------------
    def read_result(self) -> Result | None:
        try:
            data = yaml.safe_load(self.result_path.read_text())
        except FileNotFoundError:
            return None
        if not isinstance(data, dict) or not data.get("syncStatus"):
            raise ValueError(f"{RESULT_REL}: no syncStatus in {data!r}")
        return Result(str(data["syncStatus"]), str(data.get("lastSyncError") or ""))

    def write_result(self, result: Result) -> None:
        _atomic(self.result_path, yaml.safe_dump({"syncStatus": result.sync_status,
                                                  "lastSyncError": result.last_sync_error}, sort_keys=True))

    def remove_result(self) -> None:
        _unlink(self.result_path)

    # --- units and launcher ---------------------------------------------------------------------
    def unit_path(self, name: str) -> Path:
        return self.paths.under(UNIT_DIR_REL) / name

    def install_units(self) -> bool:
        """Write and enable both units; True when anything changed (upstream: a unit change reboots)."""
        changed = False
        for name, text in self.units.items():
            path = self.unit_path(name)
            if not path.exists() or path.read_text() != text:
                _atomic(path, text)
                changed = True
            link = self.paths.under(WANTS_REL) / name
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(f"/{UNIT_DIR_REL}/{name}", link)
                changed = True
        return changed

    def install_launcher(self) -> None:
        """Copy the service's Python packages and the launcher to /var/lib/sriov (every start, so an
        upgraded daemon image brings its own code to the next boot)."""
        libdir = self.paths.under(LIBDIR_REL)
        staging = libdir.with_name(libdir.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for package in SERVICE_PACKAGES:
            spec = importlib.util.find_spec(package)
            if spec is None or not spec.submodule_search_locations:
                raise FileNotFoundError(f"python package {package} not found (needed by the systemd services)")
            src = Path(next(iter(spec.submodule_search_locations)))
            shutil.copytree(src, staging / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        shutil.rmtree(libdir, ignore_errors=True)
        staging.rename(libdir)
        launcher = self.paths.under(LAUNCHER_REL)
        _atomic(launcher, LAUNCHER_TEXT)
        launcher.chmod(0o755)

    def clean(self) -> list[str]:
        """Daemon mode: remove what a former systemd mode left (upstream's CleanSriovFilesFromHost)."""
        removed = []
        for path in (self.config, self.result_path, self.supported_nics, self.paths.under(LAUNCHER_REL),
                     *(self.unit_path(n) for n in self.units), *(self.paths.under(WANTS_REL) / n for n in self.units)):
            if path.exists() or path.is_symlink():
                _unlink(path)
                removed.append(str(path.relative_to(self.paths.root)))
        libdir = self.paths.under(LIBDIR_REL)
        if libdir.exists():
            shutil.rmtree(libdir, ignore_errors=True)
            removed.append(LIBDIR_REL)
        return removed


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
