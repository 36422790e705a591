"""A hollow host's `--apply-delay` (simulated SR-IOV host, the hosts worker's own set-up): a numVfs change
spends the delay inside its sriov_numvfs writes, and each write returns with its VFs in place, as a real
kernel's does, so the daemon never waits for VFs after a write."""

from __future__ import annotations

import time
from pathlib import Path

from sriovop.hollow.fleet import PFS
from sriovop.hollow.worker import NUMVFS_WRITES, slow_like_hardware
from sriovop.host.sysfs import listdir
from test.support.host_sim import applier, sim_host

DELAY = 2.0


def _virtfns(host_root: Path, pci: str) -> int:
    return sum(1 for e in listdir(host_root / "sys/bus/pci/devices" / pci) if e.startswith("virtfn"))


def test_a_numvfs_change_takes_the_apply_delay_in_its_writes(tmp_path: Path) -> None:
    with sim_host(tmp_path, [f"xxv710:{PFS}"]) as (sim, host):
        pfs = host.discover()
        slow_like_hardware(sim, DELAY)
        share = DELAY / NUMVFS_WRITES

        # Each write hangs for its share and returns with the PF's VFs there.
        pci = pfs[0]["pciAddress"]
        started = time.monotonic()
        host.io.write(host.paths.device(pci) / "sriov_numvfs", "3", timeout=30)
        assert time.monotonic() - started >= share
        assert _virtfns(sim.root, pci) == 3
        host.io.write(host.paths.device(pci) / "sriov_numvfs", "0", timeout=30)
        assert _virtfns(sim.root, pci) == 0

        # The daemon's applier: 0 -> 3 is one write per PF, 3 -> 4 two (0, then 4), DELAY in all.
        specs = [{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 3} for pf in pfs]
        applier(host).apply(specs)
        started = time.monotonic()
        result = applier(host).apply([s | {"numVfs": 4} for s in specs])
        assert time.monotonic() - started >= DELAY
        assert sorted(result.configured) == sorted(pf["pciAddress"] for pf in pfs)
        assert [_virtfns(sim.root, pf["pciAddress"]) for pf in pfs] == [4] * PFS
