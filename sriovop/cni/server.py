"""The node server behind the static shim on /opt/cni/bin (`sriovop cni-server`).

Protocol (one request per connection, on `<socket dir>/<plugin>.sock`):

- the shim sends one JSON object `{"env": {CNI_* variables}, "stdin": "<network config>"}` and shuts
  its write side; the pod's network namespace travels with the first bytes as an SCM_RIGHTS file
  descriptor (absent when the shim could not open `CNI_NETNS`, e.g. a DEL after the pod died), so
  the server needs no view of the runtime's netns path;
- the server answers `{"stdout": ..., "stderr": ..., "exitCode": N}` and closes.

Requests are served concurrently on a pool of WORKERS threads.

Who may call: the socket directory is 0700 and the socket 0600, and every connection's SO_PEERCRED
must be uid 0 — only root on the node reaches a plugin that moves devices between namespaces.

Plugins are handlers keyed by name (`PLUGINS`: name → "module:factory"); a factory gets the
`ServerOptions` and returns a `Handler`. A new plugin served through the same shim adds one entry.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from sriovop.cni.errors import INVALID_ENV, CniError

if TYPE_CHECKING:
    from sriovop.cni.vfkernel import VfKernel

log = structlog.get_logger("sriovop.cni.server")

#: The CNI commands logged under their own event name (`cni_add`, ...), each with its `duration_ms`.
_COMMANDS = frozenset({"ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"})

#: A request larger than this is refused (a network config is a few KiB).
MAX_REQUEST = 4 << 20
#: How long a connected client may take to send its request.
READ_TIMEOUT = 30.0
#: Requests served at once (each VF is locked on its own; a node attaches a few pods at a time).
WORKERS = 16

#: Plugin name → "module:factory". The factory takes ServerOptions and returns a Handler.
PLUGINS: dict[str, str] = {
    "sriov": "sriovop.cni.plugin:sriov_handler",
    "ib-sriov": "sriovop.cni.ib_sriov:ib_sriov_handler",
    "sriovop-attach": "sriovop.cni.attach.serve:attach_handler",
}


@dataclass(frozen=True)
class ServerOptions:
    """What plugin handlers need to know about where they run."""

    #: The host's filesystem root as this process sees it (sysfs for PF/VF discovery).
    host_root: Path = Path("/")
    #: Where the plugins keep their state (upstream's /var/lib/cni: caches, locks, allocations).
    state_dir: Path = Path("/var/lib/cni")
    #: Prefix for the runtime's CNI_PATH directories when resolving IPAM plugins (the host's
    #: /opt/cni/bin is mounted under the host root inside the DaemonSet's container).
    cni_path_prefix: str = ""
    #: Where the runtime's netns paths resolve (with hostPID, /proc/1/root is the host's /).
    netns_root: Path = Path("/")
    #: The PF side of VFs (IFLA_VF_*); None: PF netlink on this host (`RealVfKernel`). The command that
    #: builds the server chooses (a development host passes its own).
    kernel: VfKernel | None = None
    #: The kubelet's pod-resources socket; when set, `sriov` ADD moves only a VF the kubelet allocated to
    #: the pod in CNI_ARGS (sriovop.cni.deviceowner).
    pod_resources: Path | None = None


@dataclass
class CniRequest:
    """One plugin invocation as the shim saw it."""

    plugin: str
    env: dict[str, str]
    stdin: bytes
    #: The pod's network namespace, open; None when the shim could not open CNI_NETNS.
    netns_fd: int | None = None
    peer_pid: int = 0
    peer_uid: int = -1

    @property
    def command(self) -> str:
        return self.env.get("CNI_COMMAND", "")


@dataclass
class CniResponse:
    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0

    @classmethod
    def error(cls, err: CniError, cni_version: str = "1.0.0") -> CniResponse:
        return cls(stdout=err.to_json(cni_version) + "\n", exit_code=1)

    def to_json(self) -> bytes:
        return json.dumps({"stdout": self.stdout, "stderr": self.stderr, "exitCode": self.exit_code}).encode()


Handler = Callable[[CniRequest], CniResponse]


def load_handlers(names: Iterable[str], options: ServerOptions,
                  plugins: Mapping[str, str] | None = None) -> dict[str, Handler]:
    """Handlers for the named plugins; an unknown name is a ValueError listing the known ones."""
    table = PLUGINS if plugins is None else plugins
    handlers: dict[str, Handler] = {}
    for name in names:
        if name not in table:
            raise ValueError(f"unknown CNI plugin {name!r}; known: {', '.join(sorted(table))}")
        module, _, attr = table[name].partition(":")
        factory = getattr(importlib.import_module(module), attr)
        handlers[name] = factory(options)
    return handlers


_WORKER = threading.local()


def _init_worker() -> None:
    _WORKER.cache = {}


def worker_cache() -> dict[object, object] | None:
    """Scratch space kept for the life of a server worker thread (e.g. a netlink socket in the host's
    namespace); None on any other thread."""
    cache: dict[object, object] | None = getattr(_WORKER, "cache", None)
    return cache


def _peer_cred(conn: socket.socket) -> tuple[int, int]:
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid


def _read_request(conn: socket.socket) -> tuple[bytes, int | None]:
    """The request body and the namespace descriptor that came with it (if any)."""
    fds: list[int] = []
    chunks: list[bytes] = []
    size = 0
    first = True
    while True:
        if first:
            data, got, _flags, _addr = socket.recv_fds(conn, 65536, 4)
            fds.extend(got)
            first = False
        else:
            data = conn.recv(65536)
        if not data:
            break
        chunks.append(data)
        size += len(data)
        if size > MAX_REQUEST:
            for fd in fds:
                os.close(fd)
            raise CniError(INVALID_ENV, "request too large", f"more than {MAX_REQUEST} bytes")
    for extra in fds[1:]:
        os.close(extra)
    return b"".join(chunks), (fds[0] if fds else None)


def _discard(conn: socket.socket) -> None:
    """Read and drop what a refused caller sent (closing any descriptor in it): closing a socket with
    unread data resets the connection, and the caller would lose the refusal it was sent."""
    conn.shutdown(socket.SHUT_WR)
    total = 0
    while total <= MAX_REQUEST:
        data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 4)
        for fd in fds:
            os.close(fd)
        if not data:
            return
        total += len(data)


class CniServer:
    """Listens on one socket per plugin; connections are served by a pool of worker threads."""

    def __init__(self, socket_dir: Path, handlers: Mapping[str, Handler], *,
                 allowed_uids: frozenset[int] = frozenset({0})) -> None:
        self.socket_dir = Path(socket_dir)
        self.handlers = dict(handlers)
        self.allowed_uids = allowed_uids
        self._listeners: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        #: Requests are served concurrently on a fixed pool (threads keep their netlink sockets).
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="cni-request",
                                        initializer=_init_worker)

    def socket_path(self, plugin: str) -> Path:
        return self.socket_dir / f"{plugin}.sock"

    def start(self) -> None:
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.socket_dir, 0o700)
        for plugin in self.handlers:
            path = self.socket_path(plugin)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)
            try:
                sock.bind(str(path))
            finally:
                os.umask(old)
            os.chmod(path, 0o600)
            sock.listen(128)
            sock.settimeout(0.5)
            self._listeners.append(sock)
            thread = threading.Thread(target=self._accept_loop, args=(plugin, sock), name=f"cni-{plugin}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
            log.info("cni server listening", plugin=plugin, socket=str(path))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for sock in self._listeners:
            sock.close()
        for plugin in self.handlers:
            try:
                self.socket_path(plugin).unlink()
            except FileNotFoundError:
                pass

    def __enter__(self) -> CniServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept_loop(self, plugin: str, sock: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._pool.submit(self._serve, plugin, conn)

    def _serve(self, plugin: str, conn: socket.socket) -> None:
        started = time.monotonic()
        request: CniRequest | None = None
        with conn:
            try:
                pid, uid = _peer_cred(conn)
                if uid not in self.allowed_uids:
                    # Nothing is read from a caller that may not call: it gets the refusal and nothing else.
                    response = CniResponse.error(CniError(
                        INVALID_ENV, "permission denied",
                        f"only root on the node may call the {plugin} CNI server (caller uid {uid}, pid {pid})"))
                    log.warning("cni request refused", plugin=plugin, peer_uid=uid, peer_pid=pid)
                    conn.settimeout(READ_TIMEOUT)
                    conn.sendall(response.to_json())
                    _discard(conn)
                    return
                conn.settimeout(READ_TIMEOUT)
                body, fd = _read_request(conn)
                request = self._parse(plugin, body, fd, pid, uid)
                response = self._handle(request)
            except CniError as err:
                response = CniResponse.error(err)
            except (OSError, ValueError) as err:
                response = CniResponse.error(CniError(INVALID_ENV, "bad request to the CNI server", str(err)))
            finally:
                if request is not None and request.netns_fd is not None:
                    os.close(request.netns_fd)
            try:
                conn.settimeout(READ_TIMEOUT)
                conn.sendall(response.to_json())
            except OSError as err:
                log.warning("cni answer not delivered", plugin=plugin, error=str(err))
        env = request.env if request is not None else {}
        command = env.get("CNI_COMMAND", "")
        # One event per command (cni_add, cni_del, ...): a log reader picks ADD or DEL durations by name.
        event = f"cni_{command.lower()}" if command in _COMMANDS else "cni request"
        log.info(event, plugin=plugin, command=command,
                 container_id=env.get("CNI_CONTAINERID", ""), ifname=env.get("CNI_IFNAME", ""),
                 exit_code=response.exit_code, duration_ms=round((time.monotonic() - started) * 1000, 1))

    @staticmethod
    def _parse(plugin: str, body: bytes, fd: int | None, pid: int, uid: int) -> CniRequest:
        try:
            raw = json.loads(body)
            env = {str(k): str(v) for k, v in dict(raw["env"]).items()}
            stdin = str(raw.get("stdin", "")).encode()
        except (ValueError, KeyError, TypeError) as err:
            if fd is not None:
                os.close(fd)
            raise CniError(INVALID_ENV, "bad request to the CNI server", f"not a shim request: {err}") from None
        return CniRequest(plugin=plugin, env=env, stdin=stdin, netns_fd=fd, peer_pid=pid, peer_uid=uid)

    def _handle(self, request: CniRequest) -> CniResponse:
        handler = self.handlers[request.plugin]
        try:
            return handler(request)
        except CniError as err:
            return CniResponse.error(err)
        except Exception as err:  # a bug must answer the runtime, not leave it hanging
            log.exception("cni handler failed", plugin=request.plugin, command=request.command)
            return CniResponse.error(CniError(999, f"{request.plugin} {request.command} failed", repr(err)))
