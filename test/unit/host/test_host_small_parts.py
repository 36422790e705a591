"""Kernel args, records, supported NICs, mstconfig parsing, the crash hook: pure logic on temp files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sriovop.host import steps as S
from sriovop.host.kargs import KernelArgs
from sriovop.host.nics import default_supported_nics
from sriovop.host.paths import HostPaths
from sriovop.host.plugins.base import Decision
from sriovop.host.plugins.mstconfig import Mstconfig
from sriovop.host.records import Checkpoint, PfRecords


def test_kernel_args_missing_from_cmdline(tmp_path: Path) -> None:
    paths = HostPaths.at(tmp_path)
    (tmp_path / "proc").mkdir()
    paths.cmdline.write_text("BOOT_IMAGE=/vmlinuz intel_iommu=on ro\n")
    kargs = KernelArgs(paths)
    assert kargs.missing(needs_vfio=False) == []
    assert kargs.missing(needs_vfio=True) == ["iommu=pt"]
    kargs.record("pci=realloc")
    assert KernelArgs(paths).missing(needs_vfio=False) == ["pci=realloc"]
    kargs.forget("pci=realloc")
    assert kargs.missing(needs_vfio=False) == []
    paths.cpuinfo.write_text("processor : 0\nvendor_id : AuthenticAMD\n")
    assert kargs.iommu_args() == ("iommu=pt",)


def test_records_and_checkpoint(tmp_path: Path) -> None:
    paths = HostPaths.at(tmp_path, state_dir="/var/lib/sriov")
    records = PfRecords(paths)
    records.save("0000:18:00.0", {"pciAddress": "0000:18:00.0", "externallyManaged": True})
    assert paths.pci_record("0000:18:00.0") == tmp_path / "var/lib/sriov/pci/0000:18:00.0"
    assert records.all() == ["0000:18:00.0"] and records.externally_managed("0000:18:00.0")
    paths.pci_record("0000:28:00.0").write_text("{half")  # a torn file reads as absent data
    assert records.load("0000:28:00.0") is None and not records.externally_managed("0000:28:00.0")
    records.clear()
    assert records.all() == []
    cp = Checkpoint(paths)
    assert cp.ensure([{"pciAddress": "a", "mtu": 4000}])
    assert not cp.ensure([{"pciAddress": "a", "mtu": 9000}])  # written once, kept
    assert cp.interface("a") == {"pciAddress": "a", "mtu": 4000} and cp.interface("b") is None
    assert [p.name for p in paths.pci_records.iterdir()] == []  # no temp files left behind


def test_supported_nics_come_from_the_api_package() -> None:
    nics = default_supported_nics()
    assert nics.is_supported_model("8086", "158B") and nics.vf_device_id("101d", "15b3") == "101e"
    assert not nics.is_supported_model("8086", "ffff")


MST_OUTPUT = """
Device #1:
----------

Device type:    ConnectX6DX
Name:           MCX623106AN-CDA_Ax
Device:         0000:3b:00.0

Configurations:                              Next Boot
         SRIOV_EN                            True(1)
         NUM_OF_VFS                          16
         LINK_TYPE_P1                        ETH(2)
         LINK_TYPE_P2                        IB(1)
         SOME_STRING                         hello
"""


def test_mstconfig_query_parsing(tmp_path: Path) -> None:
    fake = tmp_path / "mstconfig"
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{MST_OUTPUT}\nEOF\n")
    fake.chmod(0o755)
    assert Mstconfig(str(fake)).query("0000:3b:00.0") == {
        "SRIOV_EN": 1, "NUM_OF_VFS": 16, "LINK_TYPE_P1": 2, "LINK_TYPE_P2": 1}


def test_decision_or_implies_drain_for_reboot() -> None:
    assert Decision(False, False) | Decision(False, True) == Decision(True, True)
    assert Decision(True, False) | Decision() == Decision(True, False)


def test_crash_hook_parsing() -> None:
    assert S.crash_hook_from_env({}) is None
    with pytest.raises(ValueError, match="unknown step 'nope'"):
        S.crash_hook_from_env({S.CRASH_ENV: "nope"})


def test_crash_hook_kills_at_the_nth_occurrence_on_that_pf() -> None:
    code = (
        "from sriovop.host import steps as S\n"
        "import sys\n"
        "h = S.crash_hook_from_env({S.CRASH_ENV: 'bind-driver@pfB#2'})\n"
        "for pf in ['pfA', 'pfA', 'pfB', 'pfA']:\n"
        "    h('bind-driver', pf); print(pf, flush=True)\n"
        "h('bind-driver', 'pfB'); print('survived', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], env=dict(os.environ), timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["pfA", "pfA", "pfB", "pfA"]
