"""VFs of the emulated 82576 can be handed to vfio-pci (deviceType vfio-pci) when the guest has an IOMMU.

Without an IOMMU a VF has no iommu_group and vfio-pci refuses it; with QEMU's intel-iommu
(`GuestVM(iommu=True)`, kernel `intel_iommu=on`) the driver_override/unbind/drivers_probe sequence the
config daemon uses rebinds a VF from igbvf to vfio-pci and its /dev/vfio/<group> node appears.
"""

from __future__ import annotations

import json

import pytest

from test.support.vm_guest import GuestVM

pytestmark = pytest.mark.e2e

SCRIPT = r"""
set -u
modprobe vfio-pci || exit 10
echo 2 > /sys/class/net/eth0/device/sriov_numvfs || exit 11
for i in $(seq 100); do [ -e /sys/class/net/eth0/device/virtfn1/driver ] && break; sleep 0.1; done
vf=$(basename "$(readlink /sys/class/net/eth0/device/virtfn0)")
before=$(basename "$(readlink /sys/bus/pci/devices/$vf/driver)")
echo vfio-pci > /sys/bus/pci/devices/$vf/driver_override
echo "$vf" > /sys/bus/pci/drivers/igbvf/unbind
echo "$vf" > /sys/bus/pci/drivers_probe
after=$(basename "$(readlink /sys/bus/pci/devices/$vf/driver)")
group=$(basename "$(readlink /sys/bus/pci/devices/$vf/iommu_group)")
other=$(basename "$(readlink /sys/class/net/eth0/device/virtfn1/driver)")
dev=no; [ -c "/dev/vfio/$group" ] && dev=yes
printf 'VFIO-RESULT {"vf":"%s","before":"%s","after":"%s","group":"%s","dev":"%s","other":"%s"}\n' \
  "$vf" "$before" "$after" "$group" "$dev" "$other"
"""


def test_vf_rebinds_from_igbvf_to_vfio_pci_with_iommu(vm_ready: None, vm_timings: dict[str, float]) -> None:
    guest = GuestVM(igb=1, iommu=True, files={"vfio.sh": SCRIPT}).start("exec sh /run/job/vfio.sh", timeout=300)
    rc, console = guest.wait(330)
    assert rc == 0, f"guest exited {rc}\n{console[-4000:]}"
    (line,) = [ln for ln in guest.output.splitlines() if ln.startswith("VFIO-RESULT ")]
    result = json.loads(line.split(" ", 1)[1])
    assert result["vf"] == "0000:01:10.0"
    assert (result["before"], result["after"]) == ("igbvf", "vfio-pci")
    assert result["group"].isdigit() and result["dev"] == "yes", result
    assert result["other"] == "igbvf", "only the VF with the override moves"
    assert guest.exited_at is not None
    vm_timings["vfio_run_total_seconds"] = guest.exited_at - guest.started
