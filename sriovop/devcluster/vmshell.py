"""Shell snippets run inside a running QEMU guest, next to its one long-running process.

The guest runs exactly one command; `serve_requests_script()` ends that command with a loop that runs
requests dropped into the read-write job share while the process whose pid is in `$pid` lives (the
config daemon of the daemon e2e, or a guest node's kubelet supervisor). That is how the tests and
`sriovop demo pod` read the guest's kernel (sysfs, `ip`, a pod's netns) without a network path in:

    shell = GuestShell(guest)                      # anything with `job` (the share) and `console`
    rc, out, err = shell.run("ip -j link show eth0", timeout=120)

Requests are `<job>/req-<n>.sh`; answers `req-<n>.stdout`, `.stderr` and, written last, `.rc`. When the
process dies the loop prints `E2E-DAEMON-DIED <rc>` and exits 1; on SIGTERM it waits for the process
and prints `E2E-DAEMON-EXIT <rc>`.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Protocol

from sriovop.devcluster.vmguest import GuestError

DAEMON_PID_FILE = "daemon.pid"
DIED_MARK = "E2E-DAEMON-DIED"
EXIT_MARK = "E2E-DAEMON-EXIT"


class GuestHandle(Protocol):
    """What a shell needs of a guest: its job share and its console so far."""

    @property
    def job(self) -> Path: ...

    @property
    def console(self) -> str: ...


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
    """Runs shell snippets in the guest next to its process (see the module docstring)."""

    def __init__(self, guest: GuestHandle) -> None:
        self.guest = guest
        # Several processes may talk to one guest (a dev cluster's supervisor owns it, `demo pod` asks it):
        # request names carry the pid so they never collide.
        self._ids = (f"{os.getpid()}-{n}" for n in itertools.count(1))

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
                raise GuestError(f"the guest's process died before answering {cmd!r}\n{self.guest.console[-4000:]}")
            if time.monotonic() > deadline:
                raise GuestError(f"the guest did not answer {cmd!r} within {timeout}s\n"
                                 f"{self.guest.console[-4000:]}")
            time.sleep(0.2)
        rc = int(rc_path.read_text().strip())
        answer = ((job / f"req-{n}.stdout").read_text(), (job / f"req-{n}.stderr").read_text())
        for suffix in ("stdout", "stderr", "rc"):
            (job / f"req-{n}.{suffix}").unlink(missing_ok=True)
        return rc, *answer

    def check(self, cmd: str, timeout: float = 120) -> str:
        """`run` for a command that must succeed: its stdout, or a GuestError naming the command, its exit
        code and its stderr (a test's step fails there, with the guest's own words)."""
        rc, out, err = self.run(cmd, timeout=timeout)
        if rc != 0:
            raise GuestError(f"guest: {cmd}: rc {rc}: {err.strip()}")
        return out

    def daemon_alive(self, timeout: float = 120) -> bool:
        rc, _out, _err = self.run(f'kill -0 "$(cat /run/job/{DAEMON_PID_FILE})"', timeout=timeout)
        return rc == 0
