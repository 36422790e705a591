"""Who holds a VF: upstream sriov-cni's per-VF flock and allocation file, same paths and contents.

`<state>/sriov/pci/vf_lock/<pci>.lock` serialises every ADD and DEL of one VF (a late DEL of an old
pod must not reset a VF a new pod is being given), and `<state>/sriov/pci/<pci>` holds the network
namespace path of the pod that has it. A file whose namespace no longer opens is stale (the pod died
without a DEL) and is removed. Paths and formats match upstream so either plugin honours the other's.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sriovop.cni.errors import TRY_AGAIN_LATER, CniError

LOCK_TIMEOUT = 60.0


class Allocations:
    def __init__(self, data_dir: Path, netns_root: Path = Path("/")) -> None:
        #: `<state>/sriov` (upstream's dataDir); files live in its `pci/`.
        self.pci_dir = Path(data_dir) / "pci"
        #: Where the runtime's netns paths resolve (the host's / as this process sees it).
        self.netns_root = Path(netns_root)

    @contextmanager
    def lock(self, pci: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        lock_dir = self.pci_dir / "vf_lock"
        lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_dir / f"{pci}.lock", os.O_CREAT | os.O_RDONLY | os.O_CLOEXEC, 0o600)
        try:
            deadline = time.monotonic() + timeout
            delay = 0.005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise CniError(TRY_AGAIN_LATER, "VF busy",
                                       f"deviceID {pci}: lock {lock_dir}/{pci}.lock held for {timeout:g}s") from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def path(self, pci: str) -> Path:
        return self.pci_dir / pci

    def holder(self, pci: str) -> str | None:
        """The netns path of the pod holding the VF; a stale file (its netns gone) is removed."""
        try:
            netns = self.path(pci).read_text().strip()
        except FileNotFoundError:
            return None
        if netns and self.netns_alive(netns):
            return netns
        self.release(pci)
        return None

    def netns_alive(self, netns: str) -> bool:
        path = self.netns_root / netns.lstrip("/")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        os.close(fd)
        return True

    def save(self, pci: str, netns: str) -> None:
        self.pci_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path(pci).with_name(f".{pci}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, netns.encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.path(pci))

    def release(self, pci: str) -> None:
        try:
            self.path(pci).unlink()
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise
