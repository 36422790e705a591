"""Helpers for tests that run the host layer against the simulated SR-IOV host."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sriovop.host import Applier, ApplyOptions, Host
from sriovop.sim.host import SimHost

#: Short waits so failure paths (timeouts, retries) stay quick in tests.
FAST = ApplyOptions(write_timeout=10, vf_wait_timeout=3, vf_poll_interval=0.02, netdev_wait_timeout=0.5,
                    mtu_attempts=3, mtu_retry_wait=0.01)

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


@contextmanager
def sim_host(tmp_path: Path, nics: list[str], **kwargs: Any) -> Iterator[tuple[SimHost, Host]]:
    sim = SimHost(tmp_path / "host", nics, **kwargs).start()
    host = Host(sim.root, kernel=sim.access)
    try:
        yield sim, host
    finally:
        host.close()
        sim.stop()


def applier(host: Host, **kwargs: Any) -> Applier:
    return Applier(host, options=kwargs.pop("options", FAST), **kwargs)


def normalise(value: Any) -> Any:
    """Replace MAC addresses by a placeholder (golden files must not depend on them)."""
    if isinstance(value, dict):
        return {k: ("<mac>" if k == "mac" and isinstance(v, str) and _MAC.match(v) else normalise(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def pf_status(host: Host, pci: str) -> dict[str, Any]:
    for iface in host.discover():
        if iface["pciAddress"] == pci:
            return iface
    raise AssertionError(f"{pci} not discovered")


REPO = Path(__file__).resolve().parents[2]


@contextmanager
def sim_process(root: Path, nics: list[str], *extra_args: str) -> Iterator[dict[str, Any]]:
    """The simulator in its own process (it outlives daemons the test kills). Yields its description:
    {"root", "netns", "socket", "pfs": [{"pciAddress", "name", "model", "totalvfs"}]}."""
    cmd = [sys.executable, "-m", "sriovop.sim", "serve", "--root", str(root)]
    for nic in nics:
        cmd += ["--nic", nic]
    proc = subprocess.Popen([*cmd, *extra_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            proc.wait(30)
            raise AssertionError(f"simulator did not start: {proc.stderr.read() if proc.stderr else ''}")
        yield json.loads(line)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
