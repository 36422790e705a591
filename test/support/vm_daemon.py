"""The config daemon inside the e2e guest, plus a way to run commands next to it.

The guest runs exactly one command; for the daemon e2e that command is `daemon_script(...)`: it starts
`sriovop config-daemon` (the host venv's console script, visible in the guest through the 9p root) in the
background and then serves requests dropped into the read-write job share (sriovop/devcluster/vmshell.py),
so the test can cross-check the real kernel (`ip -j link show`, sysfs) while the daemon keeps running:

    guest = cluster_guest(node=node).start(daemon_script(namespace), timeout=1500)
    shell = GuestShell(guest)
    rc, out, err = shell.run("ip -j link show eth0", timeout=120)

Requests are `/run/job/req-<n>.sh`; answers `req-<n>.stdout`, `.stderr` and, written last, `.rc`. The
loop only runs while the daemon process lives, so an answered request also proves the daemon is alive;
when the daemon dies the script prints `E2E-DAEMON-DIED <rc>` and exits 1. On SIGTERM (GuestVM.stop)
it waits for the daemon and prints `E2E-DAEMON-EXIT <rc>`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from sriovop.devcluster.vmshell import EXIT_MARK, GuestShell, serve_requests_script

__all__ = ["EXIT_MARK", "GuestShell", "daemon_script"]

SRIOVOP = Path(sys.executable).parent / "sriovop"
STARTED_LOG = "config daemon started"


def daemon_script(namespace: str, *, extra_args: tuple[str, ...] = (), before: str = "",
                  reboot: bool = False) -> str:
    """Shell run as the guest's command (NODE_NAME and the kubeconfig come from `cluster_guest`).

    Loop timings are short so a test is not waiting on 30 s requeues, but retries are not so eager that
    a TCG guest spends its time re-failing: the first retry after a failure waits 2 s. `before` runs
    first (e.g. a modprobe); without `reboot` the daemon never reboots the guest (--no-reboot).
    """
    args = [str(SRIOVOP), "config-daemon", "--host-root", "/", "--node-name", "$NODE_NAME",
            "--kubeconfig", "/run/job/kubeconfig", "--namespace", namespace, "--log-format", "console",
            "--reboot" if reboot else "--no-reboot", "--requeue-after", "10", "--retry-base-delay", "2",
            "--retry-max-delay", "20",
            "--startup-max-delay", "2", *extra_args]
    cmd = " ".join(a if a.startswith("$") else shlex.quote(a) for a in args)
    return f"{before}\n{cmd} &\npid=$!\n" + serve_requests_script()
