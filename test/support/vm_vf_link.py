"""A link on an igbvf VF in the QEMU guest, reloading igbvf while the emulated handshake fails.

QEMU's 82576 sets a VF's reset-done mailbox bit only when the PF driver writes CTRL_EXT, so igbvf's reset
handshake with igb fails at random, and a VF whose handshake failed can keep its link down for good
(hack/vm/README.md has the measurements). Reloading igbvf on the VF redoes the handshake.
"""

from __future__ import annotations

import shlex
from typing import Any

from test.support.vm_daemon import GuestShell

WAIT_LINK = r"""
import sys, time
net = f"/sys/class/net/{sys.argv[1]}"
deadline = time.monotonic() + float(sys.argv[2])
while open(f"{net}/operstate").read().strip() != "up":
    if time.monotonic() > deadline:
        sys.exit(f"{sys.argv[1]} link not up after {sys.argv[2]} s")
    time.sleep(0.2)
"""
LINK_ATTEMPTS = 6
LINK_WAIT_SECONDS = 15


def vf_link_up(shell: GuestShell, vf_pci: str) -> dict[str, Any]:
    """Sets the VF's netdev (in the guest's own namespace) up and waits for its link, reloading igbvf on
    it while it has none. Returns the netdev's name and the attempts it took."""
    errors: list[str] = []
    for attempt in range(1, LINK_ATTEMPTS + 1):
        rc, out, err = shell.run(f"ls /sys/bus/pci/devices/{vf_pci}/net")
        assert rc == 0 and out.strip(), (vf_pci, err)
        name = out.split()[0]
        rc, _out, err = shell.run(f"ip link set {name} up && "
                                  f"python3 -c {shlex.quote(WAIT_LINK)} {name} {LINK_WAIT_SECONDS}")
        if rc == 0:
            return {"name": name, "attempts": attempt, "errors": errors}
        errors.append(err.strip())
        rc, _out, err = shell.run(f"echo {vf_pci} > /sys/bus/pci/drivers/igbvf/unbind && "
                                  f"echo {vf_pci} > /sys/bus/pci/drivers/igbvf/bind")
        assert rc == 0, err
    raise AssertionError(f"VF {vf_pci} had no link after {LINK_ATTEMPTS} attempts: {errors}")
