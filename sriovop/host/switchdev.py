"""eSwitch mode, VF representors, hardware offload and vDPA: upstream's switchdev handling.

Order (upstream's `setEswitchModeAndNumVFs`, mlx5 and every driver without its own strategy):
  mode not legacy? unbind every VF, set legacy → sriov_numvfs 0, N → wait for the VFs →
  target switchdev? unbind every VF, set switchdev
and for ice: mode differs? sriov_numvfs 0, set the mode → sriov_numvfs N.
Around it: `hw-tc-offload` on the PF and devlink `flow_steering_mode=smfs` before the VFs are created
(the param can change only in legacy mode, so a switchdev PF goes back to legacy with 0 VFs first;
a device without the param is fine), udev rules `10-pf-name-<pci>.rules` (the PF keeps its name when
mlx5 re-creates it as the uplink representor) and `20-switchdev-<pci>.rules` (representors renamed to
`<pf>_<vf>` by phys_switch_id/phys_port_name), and `udevadm` reload + trigger once all PFs are done.
Then per VF: rebound to its driver by the VF loop, `hw-tc-offload` on its netdev, and a vDPA device
(`vdpa:<vf pci>`, bound to virtio_vdpa or vhost_vdpa) created or removed as its group asks.
"""

from __future__ import annotations

import errno as errno_mod
import os
from pathlib import Path
from typing import Any

import structlog

from sriovop.host.eswitch_io import EswitchIO
from sriovop.host.kernelio import KernelIO
from sriovop.host.paths import HostPaths
from sriovop.host.sysfs import link_basename, listdir, read_str

log = structlog.get_logger("sriovop.host.switchdev")

LEGACY = "legacy"
SWITCHDEV = "switchdev"
TC_OFFLOAD = "hw-tc-offload"
FLOW_STEERING_MODE = "flow_steering_mode"
FLOW_STEERING_SMFS = "smfs"
VDPA_DRIVERS = {"virtio": "virtio_vdpa", "vhost": "vhost_vdpa"}
VDPA_TYPES = {v: k for k, v in VDPA_DRIVERS.items()}
#: Upstream first asks for 32 queue pairs (what hardware offload used before vDPA), then for none.
VDPA_MAX_VQP = 32
RULES_DIR = "etc/udev/rules.d"
REP_NAME_SCRIPT = "/etc/udev/switchdev-vf-link-name.sh"


def mode_of(iface: dict[str, Any]) -> str:
    """A spec or status interface's eSwitch mode; empty means legacy."""
    return SWITCHDEV if iface.get("eSwitchMode") == SWITCHDEV else LEGACY


def vdpa_name(vf_pci: str) -> str:
    return f"vdpa:{vf_pci}"


class Switchdev:
    def __init__(self, paths: HostPaths, io: KernelIO, eswitch: EswitchIO, timeout: float = 120.0) -> None:
        self.paths = paths
        self.io = io
        self.eswitch = eswitch
        self.timeout = timeout

    # --- discovery ----------------------------------------------------------------------------
    def representor(self, pf_name: str, vf_index: int) -> str:
        """The netdev with the PF's phys_switch_id and phys_port_name `pf<N>vf<index>` (sriovnet's
        lookup); empty when there is none."""
        pf_net = self.paths.class_net / pf_name
        switch_id = read_str(pf_net / "phys_switch_id")
        port = read_str(pf_net / "phys_port_name") or ""
        if not switch_id or not port.startswith("p") or not port[1:].isdigit():
            return ""
        want = f"pf{port[1:]}vf{vf_index}"
        for name in listdir(self.paths.class_net):
            net = self.paths.class_net / name
            if read_str(net / "phys_port_name") == want and read_str(net / "phys_switch_id") == switch_id:
                return name
        return ""

    def vdpa_types(self, vf_pcis: list[str]) -> dict[str, str]:
        """VF PCI address → vdpaType ("" without a vDPA device). One listing of the vDPA bus per
        discovery instead of a lookup per VF: discovery runs every pass, and most hosts have no vDPA
        device at all."""
        bus = self.paths.under("sys/bus/vdpa/devices")
        present = set(listdir(bus))
        types = dict.fromkeys(vf_pcis, "")
        for pci in vf_pcis:
            name = vdpa_name(pci)
            if name in present:
                types[pci] = VDPA_TYPES.get(link_basename(bus / name / "driver") or "", "")
        return types

    # --- PF -----------------------------------------------------------------------------------
    def enable_tc_offload(self, ifname: str) -> None:
        if not self.eswitch.features(ifname).get(TC_OFFLOAD):
            self.eswitch.set_feature(ifname, TC_OFFLOAD, True)

    def flow_steering(self, pf: str, unbind_all: Any, write_numvfs: Any) -> None:
        current = self.eswitch.devlink_param(pf, FLOW_STEERING_MODE)
        if not current or current == FLOW_STEERING_SMFS:
            return
        if self.eswitch.eswitch_mode(pf) != LEGACY:
            unbind_all()
            self.eswitch.set_eswitch_mode(pf, LEGACY)
            write_numvfs(0)
        try:
            self.eswitch.set_devlink_param(pf, FLOW_STEERING_MODE, FLOW_STEERING_SMFS)
        except OSError as e:
            if e.errno != errno_mod.EOPNOTSUPP:
                raise
            log.info("device cannot change flow_steering_mode; skipped", pf=pf)

    # --- udev ---------------------------------------------------------------------------------
    def _rule_path(self, kind: str, pf: str) -> Path:
        return self.paths.under(RULES_DIR) / f"{kind}-{pf}.rules"

    def pf_name_rule_path(self, pf: str) -> Path:
        return self._rule_path("10-pf-name", pf)

    def representor_rule_path(self, pf: str) -> Path:
        return self._rule_path("20-switchdev", pf)

    def write_pf_name_rule(self, pf: str, name: str) -> None:
        _atomic(self.pf_name_rule_path(pf),
                f'SUBSYSTEM=="net", ACTION=="add", DRIVERS=="?*", KERNELS=="{pf}", NAME="{name}"\n')

    def write_representor_rule(self, pf: str, name: str) -> bool:
        """Needs phys_switch_id and phys_port_name (old kernels show them only in switchdev mode);
        without them the rule is skipped, as upstream does, and representors keep kernel names."""
        net = self.paths.class_net / name
        switch_id, port = read_str(net / "phys_switch_id"), read_str(net / "phys_port_name")
        if not switch_id or not port:
            log.warning("no phys_switch_id/phys_port_name on the PF; representors keep their kernel names",
                        pf=pf, netdev=name)
            return False
        _atomic(self.representor_rule_path(pf),
                f'SUBSYSTEM=="net", ACTION=="add|move", ATTRS{{phys_switch_id}}=="{switch_id}", '
                f'ATTR{{phys_port_name}}=="pf{port.removeprefix("p")}vf*", '
                f'IMPORT{{program}}="{REP_NAME_SCRIPT} $attr{{phys_port_name}}", NAME="{name}_$env{{NUMBER}}"\n')
        return True

    def remove_rules(self, pf: str) -> None:
        for path in (self.pf_name_rule_path(pf), self.representor_rule_path(pf)):
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    # --- VFs ----------------------------------------------------------------------------------
    def delete_vdpa(self, vf_pci: str) -> None:
        try:
            self.eswitch.vdpa_del(vdpa_name(vf_pci))
        except OSError as e:
            if e.errno != errno_mod.ENODEV:
                raise

    def load_vdpa_driver(self, driver: str) -> None:
        """The vDPA bus driver's module, loaded before any device is created (upstream loads virtio_vdpa/
        vhost_vdpa for vdpa groups): a module that cannot be loaded fails with its name."""
        if (self.paths.under("sys/bus/vdpa/drivers") / driver).is_dir():
            return
        try:
            self.eswitch.load_module(driver)
        except OSError as e:
            raise OSError(e.errno, f"loading kernel module {driver}: {e.strerror or e}") from e
        if not (self.paths.under("sys/bus/vdpa/drivers") / driver).is_dir():
            raise OSError(errno_mod.ENODEV, f"vDPA driver {driver} is not registered after loading its module")

    def create_vdpa(self, vf_pci: str, vdpa_type: str) -> None:
        driver = VDPA_DRIVERS.get(vdpa_type)
        if driver is None:
            raise ValueError(f"unknown vdpaType {vdpa_type!r}: must be virtio or vhost")
        self.load_vdpa_driver(driver)
        name = vdpa_name(vf_pci)
        dev = self.paths.under("sys/bus/vdpa/devices") / name
        if not dev.exists():
            try:
                self.eswitch.vdpa_add(name, f"pci/{vf_pci}", VDPA_MAX_VQP)
            except OSError as e:
                if e.errno != errno_mod.EOPNOTSUPP:
                    raise
                self.eswitch.vdpa_add(name, f"pci/{vf_pci}", None)
        current = link_basename(dev / "driver") or ""
        if current == driver:
            return
        drivers = self.paths.under("sys/bus/vdpa/drivers")
        if current:
            self.io.write(drivers / current / "unbind", name, timeout=self.timeout)
        self.io.write(drivers / driver / "bind", name, timeout=self.timeout)
        if (link_basename(dev / "driver") or "") != driver:
            raise OSError(errno_mod.ENODEV, f"vDPA device {name} is not bound to {driver} after bind")

    def vf_netdev(self, vf_pci: str) -> str:
        names = listdir(self.paths.device(vf_pci) / "net")
        return names[0] if names else ""


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)
