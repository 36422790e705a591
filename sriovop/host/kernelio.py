"""The one seam between the host layer and the kernel's write side.

Everything the daemon *does* to a host is either a sysfs write or a netlink request. Reads are plain
file reads and netlink dumps under the host root. Writes go through `KernelIO`: on a real host that is
`open().write()` and netlink (`RealKernelIO`). Which implementation a `Host` gets is the caller's
choice (`KernelAccess`, kernel_access.py): a plain directory cannot react to writes the way the kernel
does, so a process driving anything but this machine's kernel passes its own.
"""

from __future__ import annotations

import errno as errno_mod
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Protocol

from sriovop.host.netlink import Netlink


class KernelIO(Protocol):
    def write(self, path: Path, data: str, *, timeout: float | None = None) -> None:
        """Write a sysfs attribute; raise OSError with the kernel's errno on failure."""

    def set_vf_mac(self, pf_name: str, pf_pci: str, vf: int, mac: str) -> None:
        """Set a VF's admin MAC on its PF; raise OSError on failure."""

    def set_vf_guid(self, pf_name: str, pf_pci: str, vf: int, guid: str) -> None:
        """Set an InfiniBand VF's node and port GUID on its PF; raise OSError on failure."""

    def modprobe(self, module: str, *params: str) -> None:
        """Load a kernel module (and its dependencies); raise OSError naming the module on failure."""

    def rdma_netns_mode(self) -> str | None:
        """The RDMA subsystem's network namespace mode (`shared`/`exclusive`); None without ib_core."""

    def set_rdma_netns_mode(self, mode: str) -> None:
        """`rdma system set netns <mode>`; raise OSError (EBUSY while other namespaces exist)."""

    def close(self) -> None: ...


def run_tool(argv: list[str], *, timeout: float = 60.0) -> str:
    """Run a host tool; OSError with the tool's own message when it fails or is missing."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise OSError(errno_mod.ENOENT, f"{argv[0]} not found (install it on the host or in the image)") from e
    except subprocess.TimeoutExpired as e:
        raise OSError(errno_mod.ETIMEDOUT, f"{' '.join(argv)} did not finish in {timeout:g}s") from e
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise OSError(errno_mod.EIO, f"{' '.join(argv)} failed ({done.returncode}): "
                                     f"{message[-1][:300] if message else 'no output'}")
    return done.stdout


def parse_rdma_system(text: str) -> str | None:
    """`rdma system show` → "shared"/"exclusive" (its output is `netns shared copy-on-fork on`; iproute2
    6.1 prints that even with -j)."""
    m = re.search(r"\bnetns\s+(shared|exclusive)\b", text)
    return m.group(1) if m else None


def in_root(root: Path, argv: list[str]) -> list[str]:
    """The host's own tool (its kmod knows its kernel's modules): chroot when the root is not `/`."""
    return argv if str(root) == "/" else ["chroot", str(root), *argv]


def _write_file(path: Path, data: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


class RealKernelIO:
    """sysfs writes with a timeout (a hung driver must not hang the daemon forever), netlink, and the
    host's own `modprobe` and iproute2 `rdma` (RDMA netlink is per namespace; the daemon runs in the
    host's network namespace)."""

    def __init__(self, netlink: Netlink, root: Path = Path("/")) -> None:
        self.netlink = netlink
        self.root = Path(root)

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

    def modprobe(self, module: str, *params: str) -> None:
        run_tool(in_root(self.root, ["modprobe", module, *params]), timeout=120.0)

    def rdma_netns_mode(self) -> str | None:
        if not (self.root / "sys/module/ib_core").is_dir():
            return None  # no RDMA subsystem; asked every pass, so no process is spawned for that answer
        try:
            out = run_tool(["rdma", "system", "show"], timeout=30.0)
        except OSError:
            return None  # no RDMA netlink family: ib_core is not loaded
        return parse_rdma_system(out)

    def set_rdma_netns_mode(self, mode: str) -> None:
        run_tool(["rdma", "system", "set", "netns", mode], timeout=30.0)

    def close(self) -> None:
        pass
