"""The simulated kernel's eSwitch side: devlink eswitch mode and params, VF representors, ethtool
features and vDPA devices, behaving like mlx5 (and like ice where ice differs).

What the model enforces, because upstream's apply order depends on it:
- `devlink dev eswitch set` is EOPNOTSUPP on models without switchdev (i40e, igb);
- mlx5 refuses a mode change while a VF is bound to a driver (EBUSY): VFs are unbound first;
- ice refuses a mode change while VFs exist (EBUSY): sriov_numvfs goes to 0 first;
- representor netdevs exist only in switchdev mode: one per VF, under the PF's PCI function, with
  `phys_port_name` `pf<port>vf<index>` and the PF's `phys_switch_id` (which the PF netdev shows only in
  switchdev mode); kernel names are `eth<n>` until a udev rule (`20-switchdev-<pci>.rules`, matched on
  phys_switch_id and phys_port_name) renames them, at creation and on `udevadm trigger`;
- devlink param `flow_steering_mode` (mlx5: dmfs|smfs) changes only in legacy mode;
- `hw-tc-offload` can be switched on only where the driver supports TC offload (EOPNOTSUPP on igb);
- vDPA devices (`vdpa dev add name vdpa:<vf> mgmtdev pci/<vf>`) need the mlx5 vDPA management device,
  which exists only for a Mellanox VF bound to mlx5_core on a PF in switchdev mode; they live on the
  vdpa bus (`sys/bus/vdpa/devices`, drivers `virtio_vdpa`/`vhost_vdpa`) and vanish with their VF's
  driver, the VF itself, or the switchdev mode.
Representor and VF netdevs exist only in the tree (like VF netdevs in sim/kernel.py), so their features
are kept here, keyed by netdev name.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sriovop.sim.devices import DeviceTable, KernelError, SimPf, SimVf
from sriovop.sim.tree import unlink, write

LEGACY = "legacy"
SWITCHDEV = "switchdev"
VDPA_DRIVERS = ("virtio_vdpa", "vhost_vdpa")
TC_OFFLOAD = "hw-tc-offload"
FLOW_STEERING = "flow_steering_mode"
_RULE = re.compile(r'ATTRS\{phys_switch_id\}=="(?P<sw>[^"]+)".*ATTR\{phys_port_name\}=="pf(?P<port>\d+)vf\*".*'
                   r'NAME="(?P<name>[^"$]+)_\$env\{NUMBER\}"')


@dataclass
class EswitchState:
    mode: str = LEGACY
    params: dict[str, str] = field(default_factory=dict)
    #: VF index → representor netdev name.
    reps: dict[int, str] = field(default_factory=dict)


class SimEswitch:
    """Called by SimKernel under its lock; every error is a KernelError with the kernel's errno.

    It reads the kernel's device table (handed in) and never calls the kernel back."""

    def __init__(self, devices: DeviceTable) -> None:
        self.devices = devices
        self.root = devices.root
        self.states: dict[str, EswitchState] = {}
        #: netdev name → feature → on (PF, VF and representor netdevs).
        self.features: dict[str, dict[str, bool]] = {}
        #: Kernel modules loaded through `modprobe` requests (the vDPA bus drivers are modules).
        self.modules: set[str] = set()
        #: Modules this kernel does not have (a test makes modprobe fail with them).
        self.missing_modules: set[str] = set()
        self._next_eth = 0

    # --- helpers ------------------------------------------------------------------------------
    def _error(self, code: int, message: str) -> Exception:
        return KernelError(code, message)

    def state(self, pf: SimPf) -> EswitchState:
        st = self.states.get(pf.pci)
        if st is None:
            st = self.states[pf.pci] = EswitchState()
            if pf.model.pf_driver == "mlx5_core":
                st.params[FLOW_STEERING] = "dmfs"
        return st

    def _pf(self, pci: str) -> SimPf:
        pf = self.devices.pfs.get(pci)
        if pf is None:
            raise self._error(errno.ENODEV, f"devlink: no device pci/{pci}")
        return pf

    def switch_id(self, pf: SimPf) -> str:
        return f"{zlib.crc32(pf.pci.encode()):08x}0000"

    def _pf_net(self, pf: SimPf) -> Path:
        return self.devices.dev_dir(pf.pci) / "net" / pf.ifname

    # --- devlink ------------------------------------------------------------------------------
    def get_mode(self, pci: str) -> str:
        pf = self._pf(pci)
        if not pf.model.switchdev:
            raise self._error(errno.EOPNOTSUPP, f"devlink: pci/{pci} ({pf.model.pf_driver}) has no eswitch")
        return self.state(pf).mode

    def set_mode(self, pci: str, mode: str) -> None:
        pf = self._pf(pci)
        if mode not in (LEGACY, SWITCHDEV):
            raise self._error(errno.EINVAL, f"devlink: invalid eswitch mode {mode!r}")
        if not pf.model.switchdev:
            raise self._error(errno.EOPNOTSUPP, f"devlink: pci/{pci} ({pf.model.pf_driver}) does not support "
                                                "eswitch mode changes: Operation not supported")
        st = self.state(pf)
        if st.mode == mode:
            return
        if pf.model.pf_driver == "ice":
            if pf.numvfs:
                raise self._error(errno.EBUSY, "ice: changing the eswitch mode is allowed only if there are no "
                                               "VFs created")
        else:
            bound = [vf.pci for vf in pf.vfs.values() if vf.driver]
            if bound:
                raise self._error(errno.EBUSY, f"mlx5_core: can't change the eswitch mode while VFs are bound to "
                                               f"a driver ({', '.join(bound)})")
        st.mode = mode
        if mode == SWITCHDEV:
            write(self._pf_net(pf) / "phys_switch_id", self.switch_id(pf))
            for vf in sorted(pf.vfs.values(), key=lambda v: v.index):
                self._add_rep(pf, vf)
        else:
            for index in sorted(st.reps):
                self._drop_rep(pf, index)
            unlink(self._pf_net(pf) / "phys_switch_id")
            for vf in pf.vfs.values():
                self._drop_vdpa(vf.pci)

    def get_param(self, pci: str, name: str) -> str:
        pf = self._pf(pci)
        st = self.state(pf)
        if name not in st.params:
            raise self._error(errno.EINVAL, f"devlink: pci/{pci} has no parameter {name}")
        return st.params[name]

    def set_param(self, pci: str, name: str, value: str) -> None:
        pf = self._pf(pci)
        st = self.state(pf)
        if name not in st.params:
            raise self._error(errno.EINVAL, f"devlink: pci/{pci} has no parameter {name}")
        if name == FLOW_STEERING:
            if value not in ("dmfs", "smfs"):
                raise self._error(errno.EINVAL, f"invalid {FLOW_STEERING} {value!r}")
            if st.mode != LEGACY:
                raise self._error(errno.EBUSY, f"mlx5_core: {FLOW_STEERING} can be changed only in legacy mode")
        st.params[name] = value

    # --- representors -------------------------------------------------------------------------
    def _add_rep(self, pf: SimPf, vf: SimVf) -> None:
        st = self.state(pf)
        if vf.index in st.reps:
            return
        name = f"eth{self._next_eth}"
        self._next_eth += 1
        net = self.devices.dev_dir(pf.pci) / "net" / name
        write(net / "phys_port_name", f"pf{pf.port}vf{vf.index}")
        write(net / "phys_switch_id", self.switch_id(pf))
        write(net / "type", "1")
        write(net / "address", _mac(name))
        write(net / "mtu", "1500")
        write(net / "flags", "0x1002")
        write(net / "operstate", "down")
        self._class_link(net, name)
        st.reps[vf.index] = name
        self._apply_rules(pf)

    def _drop_rep(self, pf: SimPf, index: int) -> None:
        name = self.state(pf).reps.pop(index, None)
        if name is None:
            return
        unlink(self.root / "sys/class/net" / name)
        shutil.rmtree(self.devices.dev_dir(pf.pci) / "net" / name, ignore_errors=True)
        self.features.pop(name, None)

    def _class_link(self, net: Path, name: str) -> None:
        link = self.root / "sys/class/net" / name
        unlink(link)
        os.symlink(os.path.relpath(net, link.parent), link)

    def _rename(self, pf: SimPf, index: int, new: str) -> None:
        st = self.state(pf)
        old = st.reps[index]
        if old == new:
            return
        if (self.root / "sys/class/net" / new).exists():
            return  # udev cannot rename onto an existing name; the kernel name stays
        net_dir = self.devices.dev_dir(pf.pci) / "net"
        os.rename(net_dir / old, net_dir / new)
        unlink(self.root / "sys/class/net" / old)
        self._class_link(net_dir / new, new)
        st.reps[index] = new
        if old in self.features:
            self.features[new] = self.features.pop(old)

    def _apply_rules(self, pf: SimPf) -> None:
        """udev: representor `add` events run the rules in etc/udev/rules.d (20-switchdev-*)."""
        st = self.state(pf)
        if st.mode != SWITCHDEV:
            return
        rules_dir = self.root / "etc/udev/rules.d"
        try:
            names = sorted(os.listdir(rules_dir))
        except OSError:
            return
        for fname in names:
            if not fname.endswith(".rules"):
                continue
            try:
                text = (rules_dir / fname).read_text()
            except OSError:
                continue
            for m in _RULE.finditer(text):
                if m["sw"] != self.switch_id(pf) or int(m["port"]) != pf.port:
                    continue
                for index in sorted(st.reps):
                    self._rename(pf, index, f"{m['name']}_{index}")

    def udev_trigger(self) -> None:
        for pf in list(self.devices.pfs.values()):
            self._apply_rules(pf)

    # --- hooks from SimKernel -----------------------------------------------------------------
    def on_vfs_created(self, pf: SimPf) -> None:
        if self.state(pf).mode == SWITCHDEV:
            for vf in sorted(pf.vfs.values(), key=lambda v: v.index):
                self._add_rep(pf, vf)

    def on_vf_removed(self, pf: SimPf, vf: SimVf) -> None:
        self._drop_vdpa(vf.pci)
        self._drop_rep(pf, vf.index)

    def on_vf_unbound(self, pf: SimPf, vf: SimVf, ifname: str) -> None:
        self._drop_vdpa(vf.pci)  # the mlx5 vDPA management device goes with the VF's mlx5_core driver
        self.features.pop(ifname, None)

    # --- ethtool ------------------------------------------------------------------------------
    def _netdev_owner(self, ifname: str) -> tuple[SimPf, bool] | None:
        """(PF, is-VF-side) of a netdev the simulator knows: PF netdev, VF netdev or representor."""
        for pf in self.devices.pfs.values():
            if pf.ifname == ifname or ifname in self.state(pf).reps.values():
                return pf, False
            for vf in pf.vfs.values():
                if vf.driver and (self.devices.dev_dir(vf.pci) / "net" / ifname).is_dir():
                    return pf, True
        return None

    def get_features(self, ifname: str) -> dict[str, bool]:
        if self._netdev_owner(ifname) is None:
            raise self._error(errno.ENODEV, f"ethtool: no such device {ifname}")
        return {TC_OFFLOAD: False, **self.features.get(ifname, {})}

    def set_feature(self, ifname: str, feature: str, on: bool) -> None:
        owner = self._netdev_owner(ifname)
        if owner is None:
            raise self._error(errno.ENODEV, f"ethtool: no such device {ifname}")
        pf, _ = owner
        if feature != TC_OFFLOAD:
            raise self._error(errno.EINVAL, f"ethtool: unknown feature {feature!r}")
        if on and not pf.model.tc_offload:
            raise self._error(errno.EOPNOTSUPP, f"ethtool: {ifname} ({pf.model.pf_driver}): could not change any "
                                                f"device features ({feature} is fixed off)")
        self.features.setdefault(ifname, {})[feature] = on

    # --- vDPA ---------------------------------------------------------------------------------
    def _vdpa_dir(self) -> Path:
        return self.root / "sys/bus/vdpa"

    def base_tree(self) -> None:
        (self._vdpa_dir() / "devices").mkdir(parents=True, exist_ok=True)
        (self._vdpa_dir() / "drivers").mkdir(parents=True, exist_ok=True)

    def load_module(self, name: str) -> None:
        """modprobe: the vDPA bus drivers register under sys/bus/vdpa/drivers; other names are unknown."""
        if name not in VDPA_DRIVERS or name in self.missing_modules:
            raise self._error(errno.ENOENT, f"modprobe: FATAL: Module {name} not found in directory "
                                            "/lib/modules/sim")
        d = self._vdpa_dir() / "drivers" / name
        d.mkdir(parents=True, exist_ok=True)
        for attr in ("bind", "unbind"):
            (d / attr).write_text("")
        self.modules.add(name)

    def vdpa_add(self, name: str, mgmtdev: str, max_vqp: int | None) -> None:
        bus, _, vf_pci = mgmtdev.partition("/")
        owner = self.devices.vf_owner.get(vf_pci) if bus == "pci" else None
        if owner is None:
            raise self._error(errno.ENODEV, f"vdpa: management device {mgmtdev} not found")
        pf, vf = owner
        if pf.model.vendor != "15b3" or vf.driver != "mlx5_core" or self.state(pf).mode != SWITCHDEV:
            raise self._error(errno.ENODEV, f"vdpa: management device {mgmtdev} not found (mlx5_vdpa needs a "
                                            "Mellanox VF bound to mlx5_core on a PF in switchdev mode)")
        dev = self.devices.dev_dir(vf.pci) / name
        if dev.exists():
            raise self._error(errno.EEXIST, f"vdpa: device {name} exists")
        if max_vqp is not None and max_vqp > 256:
            raise self._error(errno.EINVAL, f"vdpa: max_vqp {max_vqp} out of range")
        dev.mkdir(parents=True)
        write(dev / "mgmtdev", mgmtdev)
        link = self._vdpa_dir() / "devices" / name
        unlink(link)
        os.symlink(os.path.relpath(dev, link.parent), link)
        # Autoprobe: the first loaded vDPA bus driver takes it, as the kernel does.
        for driver in VDPA_DRIVERS:
            if driver in self.modules:
                self._vdpa_bind(name, driver)
                break

    def _vdpa_dev(self, name: str) -> Path:
        return self._vdpa_dir() / "devices" / name

    def _vdpa_driver(self, name: str) -> str:
        try:
            return os.path.basename(os.readlink(self._vdpa_dev(name) / "driver"))
        except OSError:
            return ""

    def _vdpa_bind(self, name: str, driver: str) -> None:
        if not (self._vdpa_dir() / "drivers" / driver).is_dir():
            raise self._error(errno.ENODEV, f"vdpa driver {driver} is not loaded")
        dev = self._vdpa_dev(name)
        real = Path(os.path.realpath(dev))
        link = real / "driver"
        unlink(link)
        os.symlink(os.path.relpath(self._vdpa_dir() / "drivers" / driver, real), link)
        drv_link = self._vdpa_dir() / "drivers" / driver / name
        unlink(drv_link)
        os.symlink(os.path.relpath(real, drv_link.parent), drv_link)

    def _vdpa_unbind(self, name: str) -> None:
        driver = self._vdpa_driver(name)
        if not driver:
            return
        unlink(Path(os.path.realpath(self._vdpa_dev(name))) / "driver")
        unlink(self._vdpa_dir() / "drivers" / driver / name)

    def vdpa_del(self, name: str) -> None:
        if not self._vdpa_dev(name).exists():
            raise self._error(errno.ENODEV, f"vdpa: device {name} not found")
        self._remove_vdpa(name)

    def _remove_vdpa(self, name: str) -> None:
        dev = Path(os.path.realpath(self._vdpa_dev(name)))
        self._vdpa_unbind(name)
        unlink(self._vdpa_dev(name))
        shutil.rmtree(dev, ignore_errors=True)

    def _drop_vdpa(self, vf_pci: str) -> None:
        devices = self._vdpa_dir() / "devices"
        try:
            names = os.listdir(devices)
        except OSError:
            return
        for name in names:
            if os.path.basename(os.path.dirname(os.path.realpath(devices / name))) == vf_pci:
                self._remove_vdpa(name)

    def vdpa_write(self, parts: tuple[str, ...], value: str) -> None:
        """Writes under sys/bus/vdpa: drivers/<drv>/{bind,unbind}."""
        if len(parts) == 6 and parts[3] == "drivers" and parts[5] in ("bind", "unbind"):
            driver, attr, name = parts[4], parts[5], value.strip()
            if not self._vdpa_dev(name).exists():
                raise self._error(errno.ENODEV, f"vdpa: no device {name}")
            if attr == "unbind":
                if self._vdpa_driver(name) != driver:
                    raise self._error(errno.ENODEV, f"{name} is not bound to {driver}")
                self._vdpa_unbind(name)
                return
            if self._vdpa_driver(name):
                raise self._error(errno.EBUSY, f"{name} is already bound to {self._vdpa_driver(name)}")
            self._vdpa_bind(name, driver)
            return
        raise self._error(errno.EACCES, f"{'/'.join(parts)}: read-only in the simulator")

    # --- the socket's entry point -------------------------------------------------------------
    def handle(self, op: str, req: dict[str, Any]) -> dict[str, Any]:
        if op == "eswitch_get":
            return {"mode": self.get_mode(str(req["pci"]))}
        if op == "eswitch_set":
            self.set_mode(str(req["pci"]), str(req["mode"]))
        elif op == "param_get":
            return {"value": self.get_param(str(req["pci"]), str(req["name"]))}
        elif op == "param_set":
            self.set_param(str(req["pci"]), str(req["name"]), str(req["value"]))
        elif op == "features_get":
            return {"features": self.get_features(str(req["ifname"]))}
        elif op == "feature_set":
            self.set_feature(str(req["ifname"]), str(req["feature"]), bool(req["on"]))
        elif op == "vdpa_add":
            vqp = req.get("max_vqp")
            self.vdpa_add(str(req["name"]), str(req["mgmtdev"]), int(vqp) if vqp is not None else None)
        elif op == "vdpa_del":
            self.vdpa_del(str(req["name"]))
        elif op == "udev_trigger":
            self.udev_trigger()
        elif op == "load_module":
            self.load_module(str(req["name"]))
        else:
            raise self._error(errno.EINVAL, f"unknown op {op!r}")
        return {}


OPS = frozenset({"eswitch_get", "eswitch_set", "param_get", "param_set", "features_get", "feature_set",
                 "vdpa_add", "vdpa_del", "udev_trigger", "load_module"})


def _mac(seed: str) -> str:
    h = zlib.crc32(seed.encode())
    return f"06:{(h >> 24) & 0xFF:02x}:{(h >> 16) & 0xFF:02x}:{(h >> 8) & 0xFF:02x}:{h & 0xFF:02x}:02"
