"""udev rules the daemon keeps on the host (upstream's `10-nm-disable-<pci>.rules`).

NetworkManager would otherwise take VF netdevs over (DHCP, renames) as soon as they appear; the rule
marks every VF of a supported model as unmanaged. It lives under the host root, so the simulated host
gets one too and tests can read it.
"""

from __future__ import annotations

from pathlib import Path

from sriovop.host.nics import SupportedNics
from sriovop.host.paths import HostPaths

RULES_DIR = "etc/udev/rules.d"
DISABLE_NM_SCRIPT = "/etc/udev/disable-nm-sriov.sh"


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

    def write_nm_disable(self, pf: str) -> None:
        """Remove, then add (upstream order): a rule left by an older daemon is always replaced."""
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
