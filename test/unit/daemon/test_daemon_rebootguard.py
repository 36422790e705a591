"""The reboot guard's counting (a file under a temporary state dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sriovop.daemon.rebootguard import RebootGuard

REASONS = ["kernel arguments missing from /proc/cmdline: intel_iommu=on iommu=pt"]


def test_same_reasons_after_the_limit_fail_and_count_once_per_boot(tmp_path: Path) -> None:
    guard = RebootGuard(tmp_path, limit=2)
    assert guard.exhausted(REASONS, "boot-a") is None
    assert guard.rebooting(REASONS, "boot-a") == 1
    assert guard.rebooting(REASONS, "boot-a") == 1, "several passes in one boot are one reboot"
    assert guard.exhausted(REASONS, "boot-b") is None
    assert guard.rebooting(REASONS, "boot-b") == 2
    assert guard.exhausted(REASONS, "boot-b") is None, "the last allowed reboot has not happened yet"
    message = guard.exhausted(REASONS, "boot-c")
    assert message is not None
    assert "after 2 reboots" in message and "intel_iommu=on iommu=pt" in message
    # The count survives across daemon restarts: a new guard reads the same file.
    assert RebootGuard(tmp_path, limit=2).exhausted(REASONS, "boot-c") == message
    assert RebootGuard(tmp_path, limit=3).exhausted(REASONS, "boot-c") is None


def test_new_reasons_start_over_and_clear_forgets(tmp_path: Path) -> None:
    guard = RebootGuard(tmp_path, limit=1)
    guard.rebooting(REASONS, "boot-a")
    assert guard.exhausted(REASONS, "boot-b") is not None
    other = ["kernel arguments missing from /proc/cmdline: pci=realloc"]
    assert guard.exhausted(other, "boot-b") is None
    assert guard.rebooting(other, "boot-b") == 1
    guard.clear()
    assert guard.exhausted(other, "boot-c") is None
    assert not guard.path.exists()


def test_limit_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RebootGuard(tmp_path, limit=0)
