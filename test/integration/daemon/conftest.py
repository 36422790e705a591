"""Fixtures for the daemon's integration tests: a simulated host per test, a unique node name."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.sim.host import SimHost

#: The simulated kernel command line: IOMMU on, so vfio-pci groups need no reboot.
IOMMU_CMDLINE = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet intel_iommu=on iommu=pt"


@pytest.fixture
def node_name() -> str:
    return f"node-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimHost]:
    """An XXV710 port (64 VFs, iavf) and an 82576 port (7 VFs, igbvf)."""
    host = SimHost(tmp_path / "host", ["xxv710:1", "82576:1"], cmdline=IOMMU_CMDLINE).start()
    try:
        yield host
    finally:
        host.stop()
