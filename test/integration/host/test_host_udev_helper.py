"""The NetworkManager-unmanaged udev rule and the helper it calls.

The rule is written on the simulated SR-IOV host by a real apply; the installed helper is then run
with /bin/sh the way udev runs it on a host, inside a private mount namespace whose /sys is a small
sysfs-shaped tree (needs root for `unshare --mount`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sriovop.host.udev import DISABLE_NM_SCRIPT, LEGACY_NM_RULE
from test.support.host_sim import applier, sim_host


def test_apply_installs_the_helper_the_rule_calls(tmp_path: Path) -> None:
    with sim_host(tmp_path, ["xxv710:1"]) as (_sim, host):
        pf = host.discover()[0]
        legacy = host.paths.root / "etc/udev/rules.d" / LEGACY_NM_RULE
        legacy.parent.mkdir(parents=True, exist_ok=True)
        legacy.write_text('ACTION=="add", ENV{NM_UNMANAGED}="1"\n')
        helper = host.paths.root / DISABLE_NM_SCRIPT.lstrip("/")
        assert not helper.exists()
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 1}])
        rule = (host.paths.root / f"etc/udev/rules.d/10-nm-disable-{pf['pciAddress']}.rules").read_text()
        assert f'IMPORT{{program}}="{DISABLE_NM_SCRIPT} $env{{INTERFACE}} {pf["pciAddress"]}"' in rule
        assert helper.stat().st_mode & 0o777 == 0o755
        assert not legacy.exists()
        # A helper changed on the host is repaired by the next apply.
        helper.write_text("#!/bin/sh\nexit 1\n")
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 2}])
        assert "NM_UNMANAGED=1" in helper.read_text()


def _fake_sys(root: Path) -> None:
    """class/net/{vf0,vf9,pf0} -> devices; vf0 is a VF of 0000:01:00.0, vf9 of 0000:02:00.0."""
    devices = root / "devices/pci0000:00"
    for pf in ("0000:01:00.0", "0000:02:00.0"):
        (devices / pf).mkdir(parents=True)
    for name, addr, parent in (("vf0", "0000:01:02.0", "0000:01:00.0"), ("vf9", "0000:02:02.0", "0000:02:00.0"),
                               ("pf0", "0000:01:00.0", None)):
        dev = devices / addr
        dev.mkdir(parents=True, exist_ok=True)
        if parent:
            os.symlink(f"../{parent}", dev / "physfn")
        (root / "class/net" / name).mkdir(parents=True)
        os.symlink(os.path.relpath(dev, root / "class/net" / name), root / "class/net" / name / "device")


@pytest.mark.parametrize(("ifname", "pf", "expected"), [
    ("vf0", "0000:01:00.0", "NM_UNMANAGED=1"),
    ("vf9", "0000:01:00.0", ""),       # a VF of another PF: that PF's own rule answers for it
    ("pf0", "0000:01:00.0", ""),       # not a VF
    ("missing", "0000:01:00.0", ""),   # gone by the time udev runs the program
])
def test_helper_answers_for_vfs_of_its_pf_only(tmp_path: Path, ifname: str, pf: str, expected: str) -> None:
    with sim_host(tmp_path / "h", ["82576:1"]) as (_sim, host):
        udev_pf = host.discover()[0]
        applier(host).apply([{"pciAddress": udev_pf["pciAddress"], "name": udev_pf["name"], "numVfs": 1}])
        helper = host.paths.root / DISABLE_NM_SCRIPT.lstrip("/")
        fake = tmp_path / "sys"
        _fake_sys(fake)
        out = subprocess.run(
            ["unshare", "--mount", "sh", "-c", 'mount --bind "$0" /sys && exec /bin/sh "$1" "$2" "$3"',
             str(fake), str(helper), ifname, pf],
            capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
