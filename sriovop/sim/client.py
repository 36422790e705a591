"""The client side of the simulator's socket: `KernelIO` and `EswitchIO` whose requests the simulator
answers (JSON lines over its abstract unix socket, sim/server.py).

The host layer cannot tell these from the real ones: the same calls, errors as OSError with the
kernel's errno. `SimKernelAccess` (sim/access.py) hands them to a `Host`.
"""

from __future__ import annotations

import errno as errno_mod
import json
import socket
import threading
from pathlib import Path

from sriovop.host.paths import HostPaths


class SimKernelIO:
    """Sends the writes to the simulator serving this root (JSON lines over a unix socket)."""

    def __init__(self, paths: HostPaths, address: str) -> None:
        self.paths = paths
        self.address = address
        self._sock: socket.socket | None = None
        self._file: object | None = None
        self._lock = threading.Lock()

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr = "\0" + self.address[1:] if self.address.startswith("@") else self.address
            sock.connect(addr)
            self._sock = sock
        return self._sock

    def request(self, req: dict[str, object], timeout: float | None) -> dict[str, object]:
        """One JSON-lines request; returns the simulator's reply, raises OSError with its errno."""
        with self._lock:
            try:
                sock = self._connect()
                sock.settimeout(timeout)
                sock.sendall(json.dumps(req).encode() + b"\n")
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        raise OSError(errno_mod.ECONNRESET, "simulator closed the connection")
                    buf += chunk
            except TimeoutError as e:
                self._reset()
                raise TimeoutError(
                    errno_mod.ETIMEDOUT, f"{req.get('op')} {req.get('path', '')} did not finish in {timeout}s"
                ) from e
            except OSError:
                self._reset()
                raise
        reply = json.loads(buf)
        if reply.get("errno"):
            raise OSError(int(reply["errno"]), str(reply.get("error", "")))
        return dict(reply)

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _rel(self, path: Path) -> str:
        return str(Path(path).relative_to(self.paths.root))

    def write(self, path: Path, data: str, *, timeout: float | None = None) -> None:
        self.request({"op": "write", "path": self._rel(path), "data": data}, timeout)

    def set_vf_mac(self, pf_name: str, pf_pci: str, vf: int, mac: str) -> None:
        self.request({"op": "set_vf_mac", "pf": pf_pci, "vf": vf, "mac": mac}, 30.0)

    def set_vf_guid(self, pf_name: str, pf_pci: str, vf: int, guid: str) -> None:
        self.request({"op": "set_vf_guid", "pf": pf_pci, "vf": vf, "guid": guid}, 30.0)

    def modprobe(self, module: str, *params: str) -> None:
        self.request({"op": "modprobe", "module": module, "params": list(params)}, 30.0)

    def rdma_netns_mode(self) -> str | None:
        mode = self.request({"op": "rdma_get"}, 30.0).get("mode")
        return str(mode) if mode else None

    def set_rdma_netns_mode(self, mode: str) -> None:
        self.request({"op": "rdma_set", "mode": mode}, 30.0)

    def close(self) -> None:
        with self._lock:
            self._reset()


class SimEswitchIO:
    """The same requests, answered by the simulator serving this root."""

    def __init__(self, io: SimKernelIO) -> None:
        self.io = io

    def _req(self, op: str, **kwargs: object) -> dict[str, object]:
        return self.io.request({"op": op, **kwargs}, 30.0)

    def eswitch_mode(self, pci: str) -> str:
        try:
            return str(self._req("eswitch_get", pci=pci)["mode"])
        except OSError:
            return "legacy"

    def set_eswitch_mode(self, pci: str, mode: str) -> None:
        self._req("eswitch_set", pci=pci, mode=mode)

    def devlink_param(self, pci: str, name: str) -> str | None:
        try:
            return str(self._req("param_get", pci=pci, name=name)["value"])
        except OSError as e:
            if e.errno in (errno_mod.EINVAL, errno_mod.ENODEV, errno_mod.EOPNOTSUPP):
                return None
            raise

    def set_devlink_param(self, pci: str, name: str, value: str) -> None:
        self._req("param_set", pci=pci, name=name, value=value)

    def features(self, ifname: str) -> dict[str, bool]:
        found = self._req("features_get", ifname=ifname)["features"]
        assert isinstance(found, dict)
        return {str(k): bool(v) for k, v in found.items()}

    def set_feature(self, ifname: str, feature: str, on: bool) -> None:
        self._req("feature_set", ifname=ifname, feature=feature, on=on)

    def vdpa_add(self, name: str, mgmtdev: str, max_vqp: int | None) -> None:
        self._req("vdpa_add", name=name, mgmtdev=mgmtdev, max_vqp=max_vqp)

    def vdpa_del(self, name: str) -> None:
        self._req("vdpa_del", name=name)

    def reload_udev(self) -> None:
        self._req("udev_trigger")

    def load_module(self, name: str) -> None:
        self._req("load_module", name=name)

    def close(self) -> None:
        pass
