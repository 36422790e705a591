"""The one HTTP server of every sriovop process: `/healthz`, `/readyz` (named checks) and `/metrics`.

The managers serve their probes and registry with it; the config daemon and the metrics exporter
(`metrics_server`) serve a registry plus text-rendered families (`TextCollector`: upstream's per-VF
series, whose names prometheus-client cannot produce) and `/healthz`. Each endpoint set binds its own
address or none, so two managers in one process never clash: give one of them the metrics address and
leave the other's unset. `host:0` picks a free port (see `.port`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = structlog.get_logger(__name__)

Check = Callable[[], None]  # raises (any exception) when unhealthy


class TextCollector(Protocol):
    """Families rendered in the Prometheus text format, appended to the registry's output on a scrape."""

    def render(self) -> str: ...


def parse_bind_address(address: str) -> tuple[str, int]:
    """`host:port`, `:port` (all interfaces) → (host, port). Bad input names the value and why."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {address!r}: expected host:port or :port")
    return (host.strip("[]") or "0.0.0.0"), int(port)


class Endpoints:
    def __init__(self) -> None:
        self.healthz: dict[str, Check] = {}
        self.readyz: dict[str, Check] = {}
        self.registry: CollectorRegistry | None = None
        self.text: list[TextCollector] = []
        self.serve_probes = False
        self.serve_metrics = False

    def metrics_body(self) -> bytes:
        head = generate_latest(self.registry) if self.registry is not None else b""
        return head + "".join(c.render() for c in self.text).encode()


def _run_checks(checks: dict[str, Check], exclude: list[str]) -> tuple[bool, str]:
    ok = True
    lines = []
    for name, check in sorted(checks.items()):
        if name in exclude:
            lines.append(f"[+]{name} excluded: ok")
            continue
        try:
            check()
            lines.append(f"[+]{name} ok")
        except Exception as exc:
            ok = False
            lines.append(f"[-]{name} failed: {exc}")
    lines.append("healthz check passed" if ok else "healthz check failed")
    return ok, "\n".join(lines) + "\n"


class LoggingHTTPServer(ThreadingHTTPServer):
    """socketserver prints a traceback to stderr for any error a request raised, outside the process's
    structured logs: a probe or a scraper that hangs up before its answer is written (BrokenPipeError)
    printed one on a loaded machine. A connection the client broke (any OSError: a reset, a broken
    pipe, a failed TLS handshake, a timeout) is the client's business and one debug line; anything else
    escaped a handler and is ours: an error with its traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            log.debug("connection_closed", client=str(client_address[0]), error=str(exc))
        else:
            log.error("request_failed", client=str(client_address[0]), exc_info=True)


class HttpServer:
    """A small threaded HTTP server; `start()` binds and serves on a daemon thread."""

    def __init__(self, address: str, endpoints: Endpoints, name: str) -> None:
        self.address = address
        self.endpoints = endpoints
        self.name = name
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{self.name} server is not started")
        return int(self._server.server_address[1])

    @property
    def bound_port(self) -> int | None:
        """The port once listening, else None (safe to poll from another thread)."""
        srv = self._server
        return int(srv.server_address[1]) if srv is not None else None

    def start(self) -> None:
        endpoints = self.endpoints

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                exclude = parse_qs(url.query).get("exclude", [])
                path = url.path.rstrip("/")
                if endpoints.serve_probes and path in ("/healthz", "/readyz"):
                    checks = endpoints.healthz if path == "/healthz" else endpoints.readyz
                    ok, text = _run_checks(checks, exclude)
                    self._send(200 if ok else 500, text.encode())
                elif endpoints.serve_metrics and path == "/metrics" and (
                        endpoints.registry is not None or endpoints.text):
                    try:
                        body = endpoints.metrics_body()
                    except Exception as exc:  # a scrape must never take the process down
                        log.warning("metrics scrape failed", error=str(exc))
                        self._send(500, f"scrape failed: {exc}\n".encode())
                        return
                    self._send(200, body, CONTENT_TYPE_LATEST)
                else:
                    self._send(404, b"not found\n")

        host, port = parse_bind_address(self.address)
        self._server = LoggingHTTPServer((host, port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"http-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)


def metrics_server(address: str, text: TextCollector, registry: CollectorRegistry | None = None,
                   name: str = "metrics") -> HttpServer:
    """`/metrics` (the registry, then `text`) and `/healthz` on `address`, for processes without a manager."""
    endpoints = Endpoints()
    endpoints.registry, endpoints.text = registry, [text]
    endpoints.serve_metrics = endpoints.serve_probes = True
    return HttpServer(address, endpoints, name)
