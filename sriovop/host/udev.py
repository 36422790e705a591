"""udev rules the daemon keeps on the host (upstream's `10-nm-disable-<pci>.rules`) and their helper.

NetworkManager would otherwise take VF netdevs over (DHCP, renames) as soon as they appear; the rule
runs `/etc/udev/disable-nm-sriov.sh <ifname> <pf pci>` for every netdev of a supported VF model, and the
helper answers `NM_UNMANAGED=1` when the netdev is a VF of that PF. A rule without its helper makes
udev log a failed program on every VF and leaves NetworkManager in charge, so the helper is installed
(and repaired if changed) every time a rule is written, and the global rule of older upstream
versions (`10-nm-unmanaged.rules`) is removed, as upstream does at start-up. Everything lives under
the host root, so the simulated host gets them too and tests can read and run them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sriovop.host.nics import SupportedNics
from sriovop.host.paths import HostPaths

RULES_DIR = "etc/udev/rules.d"
DISABLE_NM_SCRIPT = "/etc/udev/disable-nm-sriov.sh"
#: The global rule older upstream versions wrote (every VF unmanaged, whatever its PF).
LEGACY_NM_RULE = "10-nm-unmanaged.rules"
#: POSIX sh: udev runs it on the host, whose shell is all we can count on.
DISABLE_NM_HELPER = """#!/bin/sh
# Installed by the SR-IOV config daemon and run by its 10-nm-disable-<pf>.rules udev rules:
# prints NM_UNMANAGED=1 when network interface $1 is a VF of the PF at PCI address $2, so
# NetworkManager leaves that VF alone (no DHCP, no renaming).
physfn="/sys/class/net/$1/device/physfn"
[ -L "$physfn" ] || exit 0
pf=$(readlink "$physfn")
if [ "${pf##*/}" = "$2" ]; then
    echo "NM_UNMANAGED=1"
fi
exit 0
"""


class UdevRules:
    def __init__(self, paths: HostPaths, supported: SupportedNics) -> None:
        self.paths = paths
        self.supported = supported

    def nm_disable_path(self, pf: str) -> Path:
        return self.paths.under(RULES_DIR) / f"10-nm-disable-{pf}.rules"

    def nm_disable_rule(self, pf: str) -> str:
        ids = "|".join(f"0x{d}" for d in self.supported.vf_device_ids())
        return (f'ACTION=="add|change|move", ATTRS{{device}}=="{ids}", '
                f'IMPORT{{program}}="{DISABLE_NM_SCRIPT} $env{{INTERFACE}} {pf}"\n')

    def helper_path(self) -> Path:
        return self.paths.under(DISABLE_NM_SCRIPT.lstrip("/"))

    def ensure_nm_helper(self) -> None:
        """Install the helper the rules call (mode 0755), unless it is already there unchanged."""
        path = self.helper_path()
        try:
            if path.read_text() == DISABLE_NM_HELPER and path.stat().st_mode & 0o777 == 0o755:
                return
        except OSError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        # PFs configured in parallel install it at once: each writer renames its own temporary file.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(DISABLE_NM_HELPER)
        tmp.chmod(0o755)
        tmp.replace(path)
        try:
            (self.paths.under(RULES_DIR) / LEGACY_NM_RULE).unlink()
        except FileNotFoundError:
            pass

    def write_nm_disable(self, pf: str) -> None:
        """Remove, then add (upstream order): a rule left by an older daemon is always replaced."""
        self.ensure_nm_helper()
        path = self.nm_disable_path(pf)
        self.remove(pf)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(self.nm_disable_rule(pf))
        tmp.replace(path)

    def remove(self, pf: str) -> None:
        try:
            self.nm_disable_path(pf).unlink()
        except FileNotFoundError:
            pass
