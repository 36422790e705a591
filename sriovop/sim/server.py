"""The simulator's control channel: JSON lines over an abstract unix socket.

Abstract names avoid the 108-byte path limit of deep pytest temp roots and vanish with the process.
Each connection gets a thread; the kernel's own lock serialises the operations. An idle simulator costs
no CPU: its accept blocks until a client connects, and stop() wakes it by shutting the socket down
(a hollow fleet runs thousands of simulators in a few processes, where an accept polled five times a
second would be thousands of wake-ups a second for nothing).
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import structlog

from sriovop.sim.devices import KernelError
from sriovop.sim.eswitch import OPS as ESWITCH_OPS
from sriovop.sim.kernel import SimKernel
from sriovop.sim.system import SYSTEM_OPS
from sriovop.sim.vfconfig import OPS as VF_CONFIG_OPS
from sriovop.sim.vfconfig import handle as vf_config

log = structlog.get_logger("sriovop.sim")


class SimServer:
    def __init__(self, kernel: SimKernel, address: str) -> None:
        self.kernel = kernel
        self.address = address  # "@name" = abstract
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("\0" + self.address[1:])
        sock.listen(64)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept_loop, name="sim-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)  # the blocked accept returns (EINVAL)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(5)
        if self._sock is not None:
            self._sock.close()
        with self._lock:
            for conn in list(self._conns):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()

    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # shut down by stop()
                return
            with self._lock:
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name="sim-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn.makefile("rwb") as f:
                for line in f:
                    reply = self.handle(json.loads(line))
                    f.write(json.dumps(reply).encode() + b"\n")
                    f.flush()
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            op = req.get("op")
            if op in ESWITCH_OPS:
                with self.kernel.lock:
                    return {"ok": True, **self.kernel.eswitch.handle(str(op), req)}
            if op in VF_CONFIG_OPS:
                return vf_config(self.kernel, req)
            if op == "write":
                self.kernel.write(str(req["path"]), str(req["data"]))
            elif op == "set_vf_mac":
                self.kernel.set_vf_mac(str(req["pf"]), int(req["vf"]), str(req["mac"]))
            elif op == "set_vf_guid":
                self.kernel.set_vf_guid(str(req["pf"]), int(req["vf"]), str(req["guid"]))
            elif op == "fault":
                self.kernel.fault(str(req["pf"]), dict(req["faults"]))
            elif op == "ping":
                pass
            elif op in SYSTEM_OPS:
                with self.kernel.lock:
                    return self.kernel.system.handle(req)
            else:
                return {"errno": 22, "error": f"unknown op {op!r}"}
        except KernelError as e:
            return {"errno": e.errno, "error": e.strerror}
        except OSError as e:
            return {"errno": e.errno or 5, "error": str(e)}
        except Exception as e:  # a simulator bug must not kill the connection thread silently
            log.exception("simulator request failed", request=req)
            return {"errno": 5, "error": f"simulator error: {e}"}
        return {"ok": True}
