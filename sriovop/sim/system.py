"""The simulated host beyond its NICs: kernel modules, the RDMA subsystem, boots and the boot loader.

- Modules: `sys/module/<name>` appears when a module is loaded; loading `vfio_pci` creates the vfio-pci
  PCI driver (until then binding a VF to it fails as on a real kernel); a module marked unavailable
  fails like `modprobe` does when the module is not installed.
- RDMA: with `ib_core` loaded the netns mode starts from `ib_core.netns_mode=` on the command line, else
  from `options ib_core netns_mode=` under etc/modprobe.d, else shared (the kernel's default);
  `rdma system set netns` answers EBUSY while other network namespaces exist (fault `rdma_netns_busy`).
- Boots: a fresh `proc/sys/kernel/random/boot_id` each start; `next_cmdline` is what the boot loader
  passes to the next kernel, read from the boot configuration the way a boot loader reads it, unless the
  boot loader is `broken` (it ignores the configuration: the reboot-loop case).
"""

from __future__ import annotations

import errno
import re
import uuid
from pathlib import Path
from typing import Any

from sriovop.host.bootconfig import BLS_DIR, GRUB_DEFAULTS, bls_options, grub_cmdline
from sriovop.sim.devices import KernelError

#: Modules the simulated kernel has, and the PCI driver each one registers.
AVAILABLE_MODULES: dict[str, str | None] = {
    "vfio": None, "vfio_pci": "vfio-pci", "tun": None, "vhost_net": None, "vdpa": None, "virtio_vdpa": None,
    "vhost_vdpa": None, "ib_core": None, "mlx5_ib": None, "ib_uverbs": None,
}
BOOT_LOADERS = ("bls", "grub", "none", "broken")
BOOT_IMAGE = "BOOT_IMAGE=/vmlinuz"
_NETNS_OPTION = re.compile(r"^\s*options\s+ib_core\s+.*\bnetns_mode=([01])\b", re.MULTILINE)


def _error(code: int, message: str) -> OSError:
    return KernelError(code, message)


class SimSystem:
    def __init__(self, root: Path, ensure_driver: Any = None) -> None:
        self.root = Path(root)
        self.ensure_driver = ensure_driver or (lambda driver: None)
        self.loaded: set[str] = set()
        self.unavailable: set[str] = set()
        self.rdma_mode: str | None = None
        self.rdma_netns_busy = False
        self.cmdline = ""

    # --- boot ------------------------------------------------------------------------------------
    def boot(self, cmdline: str, modules: tuple[str, ...] = (), unavailable: tuple[str, ...] = ()) -> None:
        self.cmdline = cmdline
        self.unavailable = {m.replace("-", "_") for m in unavailable}
        boot_id = self.root / "proc/sys/kernel/random/boot_id"
        boot_id.parent.mkdir(parents=True, exist_ok=True)
        boot_id.write_text(str(uuid.uuid4()) + "\n")
        for name in modules:
            self.modprobe(name)

    # --- modules ---------------------------------------------------------------------------------
    def modprobe(self, name: str) -> None:
        name = name.replace("-", "_")
        if name in self.loaded:
            return
        if name in self.unavailable or name not in AVAILABLE_MODULES:
            raise _error(errno.ENOENT, f"modprobe: FATAL: Module {name} not found in directory "
                                       "/lib/modules/sim")
        (self.root / "sys/module" / name).mkdir(parents=True, exist_ok=True)
        driver = AVAILABLE_MODULES[name]
        if driver:
            self.ensure_driver(driver)
        self.loaded.add(name)
        if name == "ib_core":
            self.rdma_mode = self._initial_rdma_mode()

    def _initial_rdma_mode(self) -> str:
        for arg in self.cmdline.split():
            if arg.startswith("ib_core.netns_mode="):
                return "exclusive" if arg.endswith("=0") else "shared"
        for conf in sorted((self.root / "etc/modprobe.d").glob("*.conf")):
            m = _NETNS_OPTION.search(conf.read_text())
            if m:
                return "exclusive" if m.group(1) == "0" else "shared"
        return "shared"

    # --- RDMA ------------------------------------------------------------------------------------
    def rdma_set(self, mode: str) -> None:
        if self.rdma_mode is None:
            raise _error(errno.EOPNOTSUPP, "RDMA netlink is not available (ib_core is not loaded)")
        if mode not in ("shared", "exclusive"):
            raise _error(errno.EINVAL, f"netns mode {mode!r}: expected shared or exclusive")
        if mode != self.rdma_mode and self.rdma_netns_busy:
            raise _error(errno.EBUSY, "cannot change the RDMA netns mode while other network namespaces exist")
        self.rdma_mode = mode

    def fault(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            if key == "unavailable_modules":
                self.unavailable = {str(m).replace("-", "_") for m in value}
            elif key == "rdma_netns_busy":
                self.rdma_netns_busy = bool(value)
            else:
                raise _error(errno.EINVAL, f"unknown system fault {key!r}")

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "modprobe":
            self.modprobe(str(req["module"]))
        elif op == "rdma_get":
            return {"ok": True, "mode": self.rdma_mode}
        elif op == "rdma_set":
            self.rdma_set(str(req["mode"]))
        elif op == "system_fault":
            self.fault(dict(req["faults"]))
        else:
            raise _error(errno.EINVAL, f"unknown op {op!r}")
        return {"ok": True}


SYSTEM_OPS = frozenset({"modprobe", "rdma_get", "rdma_set", "system_fault"})


# --- the boot loader -----------------------------------------------------------------------------------
def write_boot_config(root: Path, kind: str, cmdline: str) -> None:
    """A fresh host's boot configuration matching its command line (kept if one exists already)."""
    if kind not in BOOT_LOADERS:
        raise ValueError(f"boot loader {kind!r}: expected one of {', '.join(BOOT_LOADERS)}")
    options = " ".join(a for a in cmdline.split() if not a.startswith("BOOT_IMAGE="))
    entries, grub = root / BLS_DIR, root / GRUB_DEFAULTS
    if kind == "none" or any(entries.glob("*.conf")) or grub.exists():
        return
    if kind == "grub":
        grub.parent.mkdir(parents=True, exist_ok=True)
        grub.write_text(f'GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=""\n'
                        f'GRUB_CMDLINE_LINUX="{options}"\n')
        return
    entries.mkdir(parents=True, exist_ok=True)
    (entries / "sim-6.1.0.conf").write_text(f"title Simulated Linux\nversion 6.1.0\nlinux /vmlinuz\n"
                                             f"initrd /initrd.img\noptions {options}\n")


def next_cmdline(root: Path, kind: str, current: str) -> str:
    """What the boot loader passes to the next kernel: the newest BLS entry's options, else the GRUB
    defaults; a broken boot loader (or a host without either) boots with the old command line."""
    if kind in ("broken", "none"):
        return current
    entries = sorted((root / BLS_DIR).glob("*.conf"))
    options = bls_options(entries[-1].read_text()) if entries else None
    if options is None and (root / GRUB_DEFAULTS).is_file():
        options = grub_cmdline((root / GRUB_DEFAULTS).read_text())
    return current if options is None else f"{BOOT_IMAGE} {options}".strip()
