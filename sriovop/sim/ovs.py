"""A real Open vSwitch database for the simulated host: `ovsdb-server` with the vswitch schema, serving
`<root>/var/run/openvswitch/db.sock` (where the daemon looks by default).

No ovs-vswitchd: it needs the openvswitch kernel module and would turn the bridges into datapaths of this
machine. OVSDB alone is what the daemon configures and reads back (`ovs-vsctl --no-wait`), so bridges,
ports and interfaces with all their columns behave as on a node; only the datapath is missing.

    with SimOvsdb(sim.root) as ovs:
        ovs.vsctl("list-br")
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

SCHEMA_CANDIDATES = ("/usr/share/openvswitch/vswitch.ovsschema",)
SOCKET_REL = "var/run/openvswitch/db.sock"


def schema_path() -> str:
    for candidate in SCHEMA_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    raise FileNotFoundError("the Open vSwitch schema (vswitch.ovsschema) is missing: install openvswitch-switch "
                            "(hack/install-deps.sh)")


class SimOvsdb:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.dir = self.root / "var/run/openvswitch"
        self.socket = self.root / SOCKET_REL
        self.db = self.root / "etc/openvswitch/conf.db"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> SimOvsdb:
        for tool in ("ovsdb-tool", "ovsdb-server", "ovs-vsctl"):
            if shutil.which(tool) is None:
                raise FileNotFoundError(f"{tool} is missing: install openvswitch-switch (hack/install-deps.sh)")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db.parent.mkdir(parents=True, exist_ok=True)
        if not self.db.exists():
            subprocess.run(["ovsdb-tool", "create", str(self.db), schema_path()], check=True, capture_output=True)
        log = self.dir / "ovsdb-server.log"
        self.proc = subprocess.Popen(
            ["ovsdb-server", str(self.db), f"--remote=punix:{self.socket}",
             "--remote=db:Open_vSwitch,Open_vSwitch,manager_options", f"--log-file={log}",
             f"--pidfile={self.dir / 'ovsdb-server.pid'}", f"--unixctl={self.dir / 'ovsdb-server.ctl'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ovsdb-server exited with {self.proc.returncode}; see {log}")
            if self.socket.exists():
                try:
                    self.vsctl("init")
                    return self
                except subprocess.CalledProcessError:
                    pass
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"ovsdb-server did not serve {self.socket} within {timeout:g}s")
            time.sleep(0.05)

    def vsctl(self, *args: str) -> str:
        return subprocess.run(["ovs-vsctl", f"--db=unix:{self.socket}", "--timeout=10", "--no-wait", *args],
                              check=True, capture_output=True, text=True).stdout

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> SimOvsdb:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
