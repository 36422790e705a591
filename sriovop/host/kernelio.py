"""The one seam between the host layer and the kernel's write side.

Everything the daemon *does* to a host is either a sysfs write or a netlink request. Reads are plain
file reads and netlink dumps, identical on a real and a simulated host. Writes go through `KernelIO`:
on a real host that is `open().write()` and netlink; under a simulated root the same requests go to the
simulator over a unix socket, because a plain directory cannot react to writes the way the kernel
does. The simulator is found through `<root>/.sriovop-sim/endpoint.json`, so a daemon started in
another process (and killed, and restarted) against that root talks to the same simulated kernel.
"""

from __future__ import annotations

import errno as errno_mod
import json
import os
import socket
import threading
from pathlib import Path
from typing import Protocol

from sriovop.host.netlink import Netlink
from sriovop.host.paths import HostPaths


class KernelIO(Protocol):
    def write(self, path: Path, data: str, *, timeout: float | None = None) -> None:
        """Write a sysfs attribute; raise OSError with the kernel's errno on failure."""

    def set_vf_mac(self, pf_name: str, pf_pci: str, vf: int, mac: str) -> None:
        """Set a VF's admin MAC on its PF; raise OSError on failure."""

    def set_vf_guid(self, pf_name: str, pf_pci: str, vf: int, guid: str) -> None:
        """Set an InfiniBand VF's node and port GUID on its PF; raise OSError on failure."""

    def close(self) -> None: ...


def _write_file(path: Path, data: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


class RealKernelIO:
    """sysfs writes with a timeout (a hung driver must not hang the daemon forever) and netlink."""

    def __init__(self, netlink: Netlink) -> None:
        self.netlink = netlink

    def write(self, path: Path, data: str, *, timeout: float | None = None) -> None:
        if timeout is None:
            _write_file(path, data)
            return
        result: list[BaseException | None] = []

        def run() -> None:
            try:
                _write_file(path, data)
                result.append(None)
            except BaseException as e:  # handed back to the caller below
                result.append(e)

        worker = threading.Thread(target=run, name=f"sysfs-write {path}", daemon=True)
        worker.start()
        worker.join(timeout)
        if not result:
            raise TimeoutError(errno_mod.ETIMEDOUT, f"writing {path} did not finish in {timeout}s")
        if result[0] is not None:
            raise result[0]

    def set_vf_mac(self, pf_name: str, pf_pci: str, vf: int, mac: str) -> None:
        self.netlink.set_vf_mac(pf_name, vf, mac)

    def set_vf_guid(self, pf_name: str, pf_pci: str, vf: int, guid: str) -> None:
        self.netlink.set_vf_guid(pf_name, vf, guid)

    def close(self) -> None:
        pass


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

    def close(self) -> None:
        with self._lock:
            self._reset()


def open_kernel_io(paths: HostPaths, netlink: Netlink) -> KernelIO:
    info = paths.sim_info()
    if info is not None:
        return SimKernelIO(paths, info["socket"])
    return RealKernelIO(netlink)
