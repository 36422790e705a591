"""The config daemon inside the e2e guest, plus a way to run commands next to it.

The guest runs exactly one command; for the daemon e2e that command is `daemon_script(...)`: it starts
`sriovop config-daemon` (the host venv's console script, visible in the guest through the 9p root) in the
background and then serves requests dropped into the read-write job share, so the test can cross-check
the real kernel (`ip -j link show`, sysfs) while the daemon keeps running:

    guest = cluster_guest(node=node).start(daemon_script(namespace), timeout=1500)
    shell = GuestShell(guest)
    rc, out, err = shell.run("ip -j link show eth0", timeout=120)

Requests are `/run/job/req-<n>.sh`; answers `req-<n>.stdout`, `.stderr` and, written last, `.rc`. The
loop only runs while the daemon process lives, so an answered request also proves the daemon is alive;
when the daemon dies the script prints `E2E-DAEMON-DIED <rc>` and exits 1. On SIGTERM (GuestVM.stop)
it waits for the daemon and prints `E2E-DAEMON-EXIT <rc>`.
"""

from __future__ import annotations

import itertools
import shlex
import sys
import time
from pathlib import Path

from test.support.vm_guest import GuestError, RunningGuest

SRIOVOP = Path(sys.executable).parent / "sriovop"
DAEMON_PID_FILE = "daemon.pid"
DIED_MARK = "E2E-DAEMON-DIED"
EXIT_MARK = "E2E-DAEMON-EXIT"
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


def serve_requests_script() -> str:
    """The request loop for the process whose pid is in `$pid` (the daemon, or a guest node's kubelet)."""
    return f"""\
echo "$pid" > /run/job/{DAEMON_PID_FILE}
echo "E2E-DAEMON-PID $pid"
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; rc=$?; echo "{EXIT_MARK} $rc"; exit "$rc"' TERM INT
while kill -0 "$pid" 2>/dev/null; do
  for req in /run/job/req-*.sh; do
    [ -e "$req" ] || continue
    base=${{req%.sh}}
    sh "$req" > "$base.stdout" 2> "$base.stderr"
    echo $? > "$base.rc.tmp"
    mv "$base.rc.tmp" "$base.rc"
    rm -f "$req"
  done
  sleep 0.3
done
wait "$pid"
echo "{DIED_MARK} $?"
exit 1
"""


class GuestShell:
    """Runs shell snippets in the guest next to the daemon (see the module docstring)."""

    def __init__(self, guest: RunningGuest) -> None:
        self.guest = guest
        self._ids = itertools.count(1)

    def run(self, cmd: str, timeout: float = 120) -> tuple[int, str, str]:
        n = next(self._ids)
        job = self.guest.job
        tmp = job / f"req-{n}.tmp"
        tmp.write_text(cmd + "\n")
        tmp.rename(job / f"req-{n}.sh")
        rc_path = job / f"req-{n}.rc"
        deadline = time.monotonic() + timeout
        while not rc_path.exists():
            if DIED_MARK in self.guest.console:
                raise GuestError(f"the daemon died before answering {cmd!r}\n{self.guest.console[-4000:]}")
            if time.monotonic() > deadline:
                raise GuestError(f"the guest did not answer {cmd!r} within {timeout}s\n"
                                 f"{self.guest.console[-4000:]}")
            time.sleep(0.2)
        rc = int(rc_path.read_text().strip())
        return rc, (job / f"req-{n}.stdout").read_text(), (job / f"req-{n}.stderr").read_text()

    def daemon_alive(self, timeout: float = 120) -> bool:
        rc, _out, _err = self.run(f'kill -0 "$(cat /run/job/{DAEMON_PID_FILE})"', timeout=timeout)
        return rc == 0
