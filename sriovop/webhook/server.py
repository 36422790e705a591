"""The HTTPS admission server: TLS 1.2+, one thread per connection, bounded bodies and idle time.

The TLS handshake runs in the connection's own thread (not in `accept`), so a client that connects
and never speaks cannot stall every other request; each connection also has a socket timeout.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from sriovop.runtime.serving import LoggingHTTPServer
from sriovop.webhook.handler import AdmissionHandler
from sriovop.webhook.tls import server_ssl_context

__all__ = ["MAX_BODY_BYTES", "WebhookServer", "server_ssl_context"]

log = structlog.get_logger(__name__)

#: The API server never sends more than its own request limit (3 MiB) plus the envelope.
MAX_BODY_BYTES = 3 * 1024 * 1024
#: An oversized body up to this size is read and dropped before answering 400; beyond it we just close.
DRAIN_LIMIT_BYTES = 16 * 1024 * 1024
READYZ_PATH = "/readyz"
METRICS_PATH = "/metrics"
HEALTHZ_PATH = "/healthz"


class _Handler(BaseHTTPRequestHandler):
    server: WebhookServer
    protocol_version = "HTTP/1.1"
    timeout = 30.0  # idle/slow-client bound per connection
    # Buffer the response so status line, headers and body leave in one TLS record and one segment:
    # two small writes would meet Nagle plus the client's delayed ACK and cost ~40 ms per request.
    wbufsize = -1

    def setup(self) -> None:
        super().setup()
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()

    def handle(self) -> None:
        try:
            super().handle()
        except OSError as exc:  # TLS, reset, timeout: every one is an OSError
            log.debug("connection_closed", client=self.client_address[0], error=str(exc))

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http", client=self.client_address[0], line=format % args)

    def _send(self, status: int, body: dict[str, Any] | str) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _discard(self, length: int) -> None:
        """Read (a bounded amount of) an unwanted body, so the client gets our 400 instead of a reset."""
        remaining = min(length, DRAIN_LIMIT_BYTES)
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 64 * 1024))
            if not chunk:
                return
            remaining -= len(chunk)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in (READYZ_PATH, HEALTHZ_PATH):
            self._send(200, "ok")
        elif path == METRICS_PATH:
            data = generate_latest()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self._send(404, {"error": f"no GET endpoint at {path}"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        raw_length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or raw_length is None:
            self.close_connection = True
            self._send(400, {"error": "a Content-Length is required (chunked bodies are not accepted)"})
            return
        try:
            length = int(raw_length)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._discard(length)
            self._send(400, {"error": f"Content-Length {raw_length!r} is not within 0..{MAX_BODY_BYTES} bytes"})
            return
        body = self.rfile.read(length)
        if len(body) != length:
            self.close_connection = True
            return
        status, answer = self.server.admission.handle(path, body)
        self._send(status, answer)


class WebhookServer(LoggingHTTPServer):
    """Failed TLS handshakes (a client that hangs up mid-handshake, plain HTTP on the TLS port, a port
    scan) reach `handle_error` as OSErrors: one debug line each, no traceback."""

    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], admission: AdmissionHandler, ssl_context: ssl.SSLContext) -> None:
        self.admission = admission
        self.ssl_context = ssl_context
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start_background(self) -> threading.Thread:
        """Serve on a daemon thread (tests and the benchmark); `shutdown()` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="webhook-server", daemon=True)
        thread.start()
        return thread
