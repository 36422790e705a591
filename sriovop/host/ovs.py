"""Managed OVS bridges (`spec.bridges.ovs`, feature gate manageSoftwareBridges), as upstream manages them.

The daemon owns only the bridges it created: their last applied configuration is kept in
`<state>/managed-ovs-bridges.json` (upstream's store), so a bridge an administrator made by hand is never
touched, and a managed bridge whose policy went away is removed. Per bridge (upstream's CreateOVSBridge):
the uplink is first removed from whatever bridge holds it, the bridge is re-created only when its
bridge-level settings differ (else only the uplink is re-added), and the uplink is added as a port with
its interface settings (type, options, external_ids, other_config, mtu_request). `status.bridges` is read
back from OVSDB for the managed bridges, so it shows what OVS really has.

OVSDB is reached with `ovs-vsctl --db=<socket> --no-wait` (one transaction per change; `--no-wait` because
upstream's OVSDB client does not wait for ovs-vswitchd either, and a database without a running
vswitchd must still be configurable). The socket defaults to `<root>/var/run/openvswitch/db.sock`.
"""

from __future__ import annotations

import errno as errno_mod
import json
import shutil
import subprocess
from collections.abc import Iterable
from typing import Any

import structlog

from sriovop.host.paths import HostPaths
from sriovop.host.records import atomic_write_json

log = structlog.get_logger("sriovop.host.ovs")

STORE_FILE = "managed-ovs-bridges.json"
DEFAULT_SOCKET_REL = "var/run/openvswitch/db.sock"
TIMEOUT = 15


class OvsError(OSError):
    """An ovs-vsctl call failed; the message carries its stderr (e.g. the database is unreachable)."""


def _compact(value: Any) -> Any:
    """Drop empty values recursively (omitempty), so a spec and what OVSDB reports compare equal."""
    if isinstance(value, dict):
        out = {k: _compact(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", {}, [], 0)}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def normalise(conf: dict[str, Any]) -> dict[str, Any]:
    """A bridge config in the shape both the spec and the status use, empties dropped."""
    return dict(_compact(json.loads(json.dumps(conf))))


def _ovsdb_value(value: Any) -> Any:
    """OVSDB JSON → Python: ["map", [[k, v]]] → dict, ["set", []] → None, ["set", [x]] → x."""
    if isinstance(value, list) and len(value) == 2 and value[0] == "map":
        return {str(k): str(v) for k, v in value[1]}
    if isinstance(value, list) and len(value) == 2 and value[0] == "set":
        return value[1][0] if len(value[1]) == 1 else None
    if isinstance(value, list) and len(value) == 2 and value[0] == "uuid":
        return value[1]
    return value


def _kv(prefix: str, values: dict[str, Any] | None) -> list[str]:
    return [f'{prefix}:{k}="{v}"' for k, v in sorted((values or {}).items())]


class OvsBridges:
    def __init__(self, paths: HostPaths, socket: str | None = None, *, timeout: int = TIMEOUT) -> None:
        self.paths = paths
        self.db = socket or f"unix:{paths.under(DEFAULT_SOCKET_REL)}"
        self.timeout = timeout

    # --- store --------------------------------------------------------------------------------
    @property
    def store_path(self) -> Any:
        return self.paths.state_dir / STORE_FILE

    def managed(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.store_path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}

    def _save(self, managed: dict[str, dict[str, Any]]) -> None:
        atomic_write_json(self.store_path, managed)

    # --- ovs-vsctl ----------------------------------------------------------------------------
    def vsctl(self, *args: str) -> str:
        if shutil.which("ovs-vsctl") is None:
            raise OvsError(errno_mod.ENOENT, "ovs-vsctl is not installed (Open vSwitch is needed for spec.bridges)")
        argv = ["ovs-vsctl", f"--db={self.db}", f"--timeout={self.timeout}", "--no-wait", *args]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout + 5, check=False)
        except subprocess.TimeoutExpired as e:
            raise OvsError(errno_mod.ETIMEDOUT, f"ovs-vsctl {' '.join(args[:3])}: no answer from {self.db}") from e
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip()
            raise OvsError(errno_mod.EIO, f"ovs-vsctl {' '.join(a for a in args if a != '--')[:120]}: {text}")
        return proc.stdout

    def _row(self, table: str, record: str, columns: Iterable[str]) -> dict[str, Any] | None:
        cols = list(columns)
        out = self.vsctl("--format=json", "--if-exists", f"--columns={','.join(cols)}", "list", table, record)
        if not out.strip():
            return None
        data = json.loads(out)
        if not data.get("data"):
            return None
        row = data["data"][0]
        return {h: _ovsdb_value(v) for h, v in zip(data["headings"], row, strict=True)}

    # --- state --------------------------------------------------------------------------------
    def current(self, known: dict[str, Any]) -> dict[str, Any] | None:
        """The bridge as OVSDB has it, in the spec's shape (upstream's getCurrentBridgeState)."""
        name = str(known["name"])
        br = self._row("Bridge", name, ("name", "datapath_type", "external_ids", "other_config", "fail_mode"))
        if br is None:
            return None
        conf: dict[str, Any] = {"name": name, "bridge": {
            "datapathType": br.get("datapath_type") or "", "externalIDs": br.get("external_ids") or {},
            "otherConfig": br.get("other_config") or {}, "failMode": br.get("fail_mode") or ""}}
        uplinks = []
        for up in known.get("uplinks") or []:
            iface_name = str(up.get("name") or "")
            if not iface_name or self._port_bridge(iface_name) != name:
                continue
            row = self._row("Interface", iface_name, ("type", "options", "external_ids", "other_config",
                                                      "mtu_request"))
            if row is None:
                continue
            uplinks.append({"pciAddress": up.get("pciAddress"), "name": iface_name, "interface": {
                "type": row.get("type") or "", "options": row.get("options") or {},
                "externalIDs": row.get("external_ids") or {}, "otherConfig": row.get("other_config") or {},
                "mtuRequest": row.get("mtu_request") or 0}})
        conf["uplinks"] = uplinks
        return normalise(conf)

    def _port_bridge(self, port: str) -> str:
        try:
            return self.vsctl("port-to-br", port).strip()
        except OvsError:
            return ""

    def status(self) -> list[dict[str, Any]]:
        """`status.bridges.ovs`: every managed bridge that exists, sorted by name."""
        out = []
        for known in self.managed().values():
            cur = self.current(known)
            if cur is not None:
                out.append(cur)
        return sorted(out, key=lambda b: str(b["name"]))

    # --- changes ------------------------------------------------------------------------------
    def configure(self, desired: list[dict[str, Any]]) -> None:
        """Make the managed bridges match `desired` (spec.bridges.ovs): create/update, remove the rest."""
        for conf in desired:
            self.configure_one(conf)
        self.remove_unwanted({str(b["name"]) for b in desired})

    def remove_unwanted(self, wanted: set[str]) -> None:
        for name in sorted(set(self.managed()) - wanted):
            self.remove(name)

    def configure_one(self, conf: dict[str, Any]) -> None:
        conf = normalise(conf)
        name = str(conf["name"])
        uplinks = conf.get("uplinks") or []
        if len(uplinks) != 1 or not uplinks[0].get("name"):
            raise OvsError(errno_mod.EINVAL, f"bridge {name}: exactly one uplink with a name is supported, "
                                             f"got {len(uplinks)}")
        managed = self.managed()
        known = managed.get(name)
        if known != conf:
            managed[name] = conf
            self._save(managed)
        keep_bridge = False
        if known is not None:
            cur = self.current(known)
            if cur == conf:
                return
            keep_bridge = cur is not None and cur.get("bridge") == conf.get("bridge")
        uplink = uplinks[0]
        iface = uplink.get("interface") or {}
        bridge = conf.get("bridge") or {}
        args: list[str] = ["--", "--if-exists", "del-port", str(uplink["name"])]
        if not keep_bridge:
            args += ["--", "--if-exists", "del-br", name, "--", "add-br", name]
            settings = _kv("external_ids", bridge.get("externalIDs")) + _kv("other_config", bridge.get("otherConfig"))
            if bridge.get("datapathType"):
                settings.append(f"datapath_type={bridge['datapathType']}")
            if bridge.get("failMode"):
                settings.append(f"fail_mode={bridge['failMode']}")
            if settings:
                args += ["--", "set", "Bridge", name, *settings]
        args += ["--", "add-port", name, str(uplink["name"])]
        iset = (_kv("options", iface.get("options")) + _kv("external_ids", iface.get("externalIDs"))
                + _kv("other_config", iface.get("otherConfig")))
        if iface.get("type"):
            iset.append(f"type={iface['type']}")
        if iface.get("mtuRequest"):
            iset.append(f"mtu_request={int(iface['mtuRequest'])}")
        if iset:
            args += ["--", "set", "Interface", str(uplink["name"]), *iset]
        log.info("configuring OVS bridge", bridge=name, uplink=uplink["name"], recreate=not keep_bridge)
        self.vsctl(*args)

    def remove(self, name: str) -> None:
        managed = self.managed()
        if name not in managed:
            return
        log.info("removing managed OVS bridge", bridge=name)
        self.vsctl("--if-exists", "del-br", name)
        del managed[name]
        self._save(managed)

    def detach_uplink(self, pci: str) -> None:
        """Before an eSwitch mode change: take the PF out of its managed bridge (upstream's
        DetachInterfaceFromManagedBridge; a mode change can fail while TC rules are offloaded)."""
        for conf in self.managed().values():
            for up in conf.get("uplinks") or []:
                if up.get("pciAddress") == pci and up.get("name"):
                    self.vsctl("--if-exists", "del-port", str(conf["name"]), str(up["name"]))
