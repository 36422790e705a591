"""A boot loader for the e2e guest: its /boot survives the guest, and each boot reads the command line
from the boot entry there, as a boot loader would.

    disk = GuestBootDisk(tmp_path / "disk", hostname="node-1")      # one BLS entry, the default command line
    guest = cluster_guest(node="node-1", persist=disk.path, cmdline=disk.cmdline(), iommu=True).start(...)
    # ... the config daemon edits /boot/loader/entries/*.conf and "reboots" (the guest powers off) ...
    next_boot = cluster_guest(..., persist=disk.path, cmdline=disk.cmdline())        # with its edits
    broken = cluster_guest(..., persist=disk.path, cmdline=disk.cmdline(broken=True))  # ignores them

`disk.path/boot` is the guest's /boot and `disk.path/state` its /etc/sriov-operator (hack/vm/init.sh), so
the daemon's state (PF records, the reboot guard's count) survives the reboot as on a real node.
"""

from __future__ import annotations

from pathlib import Path

from sriovop.host.bootconfig import BLS_DIR, bls_options

ENTRY = "sriovop-e2e.conf"
#: Why the daemon's reboot command is this: the guest's init.sh powers off and says so on the console.
REBOOT_COMMAND = "sync; touch /run/job/reboot"
REBOOT_MARK = "SRIOVOP-GUEST-REBOOT"
#: The kernel arguments every guest boots with (hack/vm/run.sh's default line starts with the same file).
BASE_CMDLINE = (Path(__file__).resolve().parents[2] / "hack" / "vm" / "base-cmdline").read_text().strip()


class GuestBootDisk:
    def __init__(self, path: Path, hostname: str, extra: str = "") -> None:
        self.path = Path(path)
        self.initial = f"{BASE_CMDLINE} sriovop.hostname={hostname} {extra}".strip()
        entries = self.path / "boot" / BLS_DIR.removeprefix("boot/")
        entries.mkdir(parents=True, exist_ok=True)
        (self.path / "state").mkdir(exist_ok=True)
        self.entry = entries / ENTRY
        self.entry.write_text(f"title sriovop e2e guest\nlinux /vmlinuz\noptions {self.initial}\n")

    def options(self) -> str:
        return bls_options(self.entry.read_text()) or ""

    def cmdline(self, *, broken: bool = False) -> str:
        """What the next boot gets: the entry's options, or (a broken boot loader) the original line."""
        return self.initial if broken else self.options()
