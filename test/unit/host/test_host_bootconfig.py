"""Kernel arguments written for the next boot: BLS entries, GRUB defaults, OSTree, and none at all
(plain files under a temporary root; no simulator needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sriovop.host.bootconfig import BootConfig, BootConfigError, bls_options, grub_cmdline
from sriovop.host.kargs import KernelArgs
from sriovop.host.paths import HostPaths

ENTRY = "title Debian\nversion 6.1.0\nlinux /vmlinuz-6.1.0\noptions root=/dev/sda1 ro quiet\n"
GRUB = 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX="console=ttyS0 iommu=pt"\n'


def _root(tmp_path: Path, *, bls: int = 0, grub: bool = False, cmdline: str = "root=/dev/sda1 ro quiet") -> Path:
    root = tmp_path / "root"
    for i in range(bls):
        entry = root / "boot/loader/entries" / f"k{i}.conf"
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text(ENTRY)
    if grub:
        (root / "etc/default").mkdir(parents=True, exist_ok=True)
        (root / "etc/default/grub").write_text(GRUB)
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc/cmdline").write_text(cmdline + "\n")
    return root


def test_bls_entries_all_get_the_argument_and_lose_it_again(tmp_path: Path) -> None:
    root = _root(tmp_path, bls=2)
    boot = BootConfig(HostPaths.at(root))
    assert boot.edit(add=["intel_iommu=on", "iommu=pt"]) == ["boot/loader/entries/k0.conf",
                                                              "boot/loader/entries/k1.conf"]
    for entry in boot.bls_entries():
        assert bls_options(entry.read_text()) == "root=/dev/sda1 ro quiet intel_iommu=on iommu=pt"
        assert entry.read_text().startswith("title Debian\n")
    assert boot.edit(add=["intel_iommu=on"]) == [], "already there: nothing written"
    boot.edit(remove=["intel_iommu=on"])
    assert boot.next_boot_args() == {"root=/dev/sda1", "ro", "quiet", "iommu=pt"}


def test_grub_defaults_are_edited_keeping_the_other_lines(tmp_path: Path) -> None:
    root = _root(tmp_path, grub=True)
    boot = BootConfig(HostPaths.at(root))
    assert boot.kinds() == ["grub-defaults"]
    boot.edit(add=["intel_iommu=on"], remove=["iommu=pt"])
    text = (root / "etc/default/grub").read_text()
    assert grub_cmdline(text) == "console=ttyS0 intel_iommu=on"
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"' in text and text.startswith("GRUB_DEFAULT=0\n")


def test_grub_cfg_is_regenerated_with_the_hosts_generator(tmp_path: Path) -> None:
    root = _root(tmp_path, grub=True)
    (root / "usr/sbin").mkdir(parents=True)
    (root / "usr/sbin/update-grub").write_text("#!/bin/sh\n")
    ran: list[list[str]] = []
    boot = BootConfig(HostPaths.at(root), run=lambda argv: ran.append(argv) or "")
    assert boot.edit(add=["pci=realloc"]) == ["etc/default/grub", "update-grub"]
    assert ran == [["chroot", str(root), "update-grub"]]


def test_ostree_hosts_use_rpm_ostree_kargs(tmp_path: Path) -> None:
    root = _root(tmp_path, bls=1)
    (root / "run").mkdir()
    (root / "run/ostree-booted").write_text("")
    ran: list[list[str]] = []
    boot = BootConfig(HostPaths.at(root), run=lambda argv: ran.append(argv) or "")
    boot.edit(add=["intel_iommu=on"], remove=["ib_core.netns_mode=1"])
    assert ran == [["chroot", str(root), "rpm-ostree", "kargs", "--append-if-missing=intel_iommu=on",
                    "--delete-if-present=ib_core.netns_mode=1"]]
    assert bls_options(boot.bls_entries()[0].read_text()) == "root=/dev/sda1 ro quiet", "OSTree owns its entries"


def test_no_boot_configuration_is_an_error_naming_what_was_looked_for(tmp_path: Path) -> None:
    root = _root(tmp_path)
    with pytest.raises(BootConfigError, match=r"cannot add intel_iommu=on: .*boot/loader/entries/\*\.conf.*"
                                              r"etc/default/grub"):
        BootConfig(HostPaths.at(root)).edit(add=["intel_iommu=on"])


def test_kargs_sync_removes_only_what_the_daemon_added(tmp_path: Path) -> None:
    root = _root(tmp_path, bls=1)
    entry = root / "boot/loader/entries/k0.conf"
    entry.write_text(ENTRY.replace("quiet", "quiet iommu=pt"))  # the administrator's own iommu=pt
    kargs = KernelArgs(HostPaths.at(root))
    kargs.sync(kargs.desired(needs_vfio=True))
    assert bls_options(entry.read_text()) == "root=/dev/sda1 ro quiet iommu=pt intel_iommu=on"
    assert kargs.added() == {"intel_iommu=on"}
    assert kargs.missing(needs_vfio=True) == ["intel_iommu=on", "iommu=pt"]
    # The vfio-pci group is gone: the daemon's argument goes, the administrator's stays.
    kargs.sync(kargs.desired(needs_vfio=False))
    assert bls_options(entry.read_text()) == "root=/dev/sda1 ro quiet iommu=pt"
    assert kargs.added() == set()


def test_rdma_mode_arguments_replace_each_other(tmp_path: Path) -> None:
    root = _root(tmp_path, bls=1)
    kargs = KernelArgs(HostPaths.at(root))
    kargs.sync({"ib_core.netns_mode=0"})
    assert kargs.boot.next_boot_args() >= {"ib_core.netns_mode=0"}  # type: ignore[operator]
    kargs.sync({"ib_core.netns_mode=1"})
    args = kargs.boot.next_boot_args() or set()
    assert "ib_core.netns_mode=1" in args and "ib_core.netns_mode=0" not in args
    kargs.sync(set())
    assert not {a for a in kargs.boot.next_boot_args() or set() if a.startswith("ib_core.")}


def test_rdma_system_output_is_parsed_as_iproute2_prints_it() -> None:
    from sriovop.host.kernelio import parse_rdma_system

    assert parse_rdma_system("netns shared copy-on-fork on\n") == "shared"
    assert parse_rdma_system("netns exclusive copy-on-fork on\n") == "exclusive"
    assert parse_rdma_system("error: Protocol not supported\n") is None


def test_nothing_wanted_on_a_host_without_boot_configuration_is_not_an_error(tmp_path: Path) -> None:
    kargs = KernelArgs(HostPaths.at(_root(tmp_path)))
    assert kargs.sync(set()) == [], "the RDMA arguments need no removal where nothing can hold them"
    with pytest.raises(BootConfigError):
        kargs.sync({"intel_iommu=on"})
