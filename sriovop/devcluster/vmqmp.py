"""Ask a running QEMU what its guest is doing, through QMP (hack/vm/run.sh listens on JOB/qmp.sock).

Used when a boot stalls before the guest's init prints anything: the console is then empty, and only
QEMU can tell whether the vCPUs run, halt or wait on I/O, and where (the registers). QMP is JSON lines
over a unix socket; the three commands here are all the harness needs, so no QMP library is pulled in.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

COMMANDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("query-status", {}),
    ("human-monitor-command", {"command-line": "info registers"}),
)


def _exchange(sock: socket.socket, reader: Any, request: dict[str, Any]) -> Any:
    sock.sendall(json.dumps(request).encode() + b"\n")
    while True:  # asynchronous events may arrive before the reply
        line = reader.readline()
        if not line:
            raise ConnectionError("QMP closed the connection")
        reply = json.loads(line)
        if "return" in reply or "error" in reply:
            return reply.get("return", reply.get("error"))


def snapshot(qmp_socket: Path, timeout: float = 10.0) -> str:
    """QEMU's run state and the vCPU registers, as text for a failure message; never raises."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(qmp_socket))
            reader = sock.makefile("r")
            reader.readline()  # the greeting
            _exchange(sock, reader, {"execute": "qmp_capabilities"})
            parts = []
            for name, arguments in COMMANDS:
                answer = _exchange(sock, reader, {"execute": name, "arguments": arguments})
                parts.append(f"{name}: {answer if isinstance(answer, str) else json.dumps(answer)}")
            return "\n".join(parts)
    except (OSError, ValueError) as exc:
        return f"QMP at {qmp_socket} did not answer: {type(exc).__name__}: {exc}"
