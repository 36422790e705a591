"""crictl against one dev-cluster node's containerd, the one way the tests call it.

crictl gives each CRI call 2 s by default (its `--timeout`; a stop adds its grace period to that). A
SIGKILL stop or a pod listing can take longer on a loaded machine, and the call then fails with
DeadlineExceeded although the runtime goes on to do it: a fault in a test, not in the code under
test. The kubelet gives the runtime 2 minutes per call; these calls get 60 s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from sriovop.devcluster.binaries import find_node_binaries

CALL_TIMEOUT = "60s"


class CrictlError(RuntimeError):
    """crictl exited non-zero; the message carries its stderr (CalledProcessError's would not)."""


def crictl(socket: Path, *args: str, with_stderr: bool = False) -> str:
    """stdout of `crictl <args>`; `with_stderr` for `logs` (a container's stderr comes there)."""
    cmd = [str(find_node_binaries().crictl), "--runtime-endpoint", f"unix://{socket}",
           "--timeout", CALL_TIMEOUT, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        raise CrictlError(f"crictl {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout + (done.stderr if with_stderr else "")
