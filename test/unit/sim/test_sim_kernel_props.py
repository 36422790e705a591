"""Property test of the simulated kernel: any sequence of sysfs writes keeps sysfs self-consistent.

The simulator is what every daemon test trusts, so its tree must never show what a kernel would not:
a virtfn link without a VF, a VF without physfn, a driver link without the driver's back link, a
netdev on a driverless or vfio-bound VF, or sriov_numvfs disagreeing with the VFs present.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sriovop.sim.devices import KernelError, SimPf
from sriovop.sim.kernel import SimKernel
from sriovop.sim.models import MODELS, NETDEV_DRIVERS

PF = "0000:18:00.0"
DRIVERS = ["igbvf", "vfio-pci", "nosuch"]


class SimKernelMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="simkernel-"))
        self.kernel = SimKernel(self.tmp)
        self.kernel.base_tree()
        model = MODELS["82576"]
        self.kernel.add_pf(SimPf(pci=PF, model=model, port=0, ifname="ens1f0", alt_name="x", mac="02:00:00:00:00:01"))
        self.total = model.totalvfs

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def vfs(self) -> list[str]:
        return [self.kernel.vf_pci(self.kernel.pfs[PF], i) for i in range(self.total)]

    def write(self, rel: str, data: str) -> int:
        try:
            self.kernel.write(rel, data)
        except KernelError as e:
            return e.errno or 0
        return 0

    @rule(n=st.integers(min_value=0, max_value=9))
    def numvfs(self, n: int) -> None:
        before = self.kernel.pfs[PF].numvfs
        code = self.write(f"sys/bus/pci/devices/{PF}/sriov_numvfs", str(n))
        if n > self.total:
            assert code == errno.ERANGE
        elif before and n and n != before:
            assert code == errno.EBUSY
        else:
            assert code == 0 and self.kernel.pfs[PF].numvfs == n

    @rule(i=st.integers(0, 6), drv=st.sampled_from(DRIVERS))
    def bind(self, i: int, drv: str) -> None:
        self.write(f"sys/bus/pci/drivers/{drv}/bind", self.vfs()[i])

    @rule(i=st.integers(0, 6), drv=st.sampled_from(DRIVERS))
    def unbind(self, i: int, drv: str) -> None:
        self.write(f"sys/bus/pci/drivers/{drv}/unbind", self.vfs()[i])

    @rule(i=st.integers(0, 6), value=st.sampled_from(["vfio-pci", "\x00", "igbvf", ""]))
    def override(self, i: int, value: str) -> None:
        self.write(f"sys/bus/pci/devices/{self.vfs()[i]}/driver_override", value)

    @rule(i=st.integers(0, 6))
    def probe(self, i: int) -> None:
        self.write("sys/bus/pci/drivers_probe", self.vfs()[i])

    @rule(refuse=st.sampled_from([[], ["igbvf"], ["vfio-pci"]]))
    def refuse(self, refuse: list[str]) -> None:
        self.kernel.fault(PF, {"refuse_bind": refuse})

    @invariant()
    def consistent(self) -> None:
        root = self.tmp
        pf_dir = root / "sys/bus/pci/devices" / PF
        virtfns = sorted(e for e in os.listdir(pf_dir) if e.startswith("virtfn"))
        numvfs = int((pf_dir / "sriov_numvfs").read_text())
        assert len(virtfns) == numvfs == len(self.kernel.pfs[PF].vfs)
        for entry in virtfns:
            vf = os.path.basename(os.readlink(pf_dir / entry))
            vf_dir = root / "sys/bus/pci/devices" / vf
            assert os.path.basename(os.readlink(vf_dir / "physfn")) == PF
            driver = os.path.basename(os.readlink(vf_dir / "driver")) if (vf_dir / "driver").is_symlink() else ""
            if driver:
                assert (root / "sys/bus/pci/drivers" / driver / vf).is_symlink()
            has_net = (vf_dir / "net").is_dir()
            assert has_net == (driver in NETDEV_DRIVERS)
        # No VF devices linger after removal; driver dirs only point at existing devices.
        present = {os.path.basename(os.readlink(pf_dir / e)) for e in virtfns}
        for name in os.listdir(root / "sys/bus/pci/devices"):
            assert name == PF or name in present
        for drv in os.listdir(root / "sys/bus/pci/drivers"):
            for entry in os.listdir(root / "sys/bus/pci/drivers" / drv):
                if entry.startswith("0000:"):
                    assert entry == PF or entry in present


SimKernelMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestSimKernel = SimKernelMachine.TestCase
