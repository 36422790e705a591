"""The real-host write primitive: plain sysfs writes, errno preserved, bounded by a timeout."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from sriovop.host.kernelio import RealKernelIO
from sriovop.host.netlink import Netlink


def test_write_and_errno(tmp_path: Path) -> None:
    io = RealKernelIO(Netlink())
    attr = tmp_path / "sriov_numvfs"
    attr.write_text("0\n")
    io.write(attr, "4", timeout=5)
    assert attr.read_text() == "4\n"
    with pytest.raises(OSError) as e:
        io.write(tmp_path / "missing", "1", timeout=5)
    assert e.value.errno == errno.ENOENT


def test_a_hung_write_times_out(tmp_path: Path) -> None:
    # Opening a FIFO for writing blocks until a reader appears: a stand-in for a driver that hangs.
    fifo = tmp_path / "hang"
    os.mkfifo(fifo)
    io = RealKernelIO(Netlink())
    with pytest.raises(TimeoutError) as e:
        io.write(fifo, "1", timeout=0.2)
    assert e.value.errno == errno.ETIMEDOUT
    # Release the blocked writer thread.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    os.close(fd)
