"""`SimControl`: talk to a running simulator from any process (faults, liveness).

Tests and benchmarks use it to inject faults into a simulator another process serves (e.g. a daemon
under test and `python -m sriovop.sim serve` in separate processes).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from sriovop.sim.endpoint import SIM_DIR, SIM_ENDPOINT_FILE, read_endpoint


class SimControl:
    """Talk to a simulator serving `root` from any process (faults, liveness)."""

    def __init__(self, root: str | Path) -> None:
        info = read_endpoint(root)
        if info is None:
            raise FileNotFoundError(f"{root} is not a simulated host (no {SIM_DIR}/{SIM_ENDPOINT_FILE})")
        self.address = info["socket"]
        self.netns = info["netns"]

    def _request(self, req: dict[str, Any]) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect("\0" + self.address[1:])
            s.sendall(json.dumps(req).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        reply = json.loads(buf)
        if reply.get("errno"):
            raise OSError(int(reply["errno"]), str(reply.get("error")))

    def fault(self, pf_pci: str, **values: Any) -> None:
        if "refuse_bind" in values:
            values["refuse_bind"] = sorted(values["refuse_bind"])
        self._request({"op": "fault", "pf": pf_pci, "faults": values})

    def system_fault(self, **values: Any) -> None:
        self._request({"op": "system_fault", "faults": values})

    def ping(self) -> None:
        self._request({"op": "ping"})
