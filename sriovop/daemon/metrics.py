"""The config daemon's Prometheus endpoint: per-VF counters (read on scrape) plus the controller metrics.

The VF families come from host/vfmetrics.py (shared with the metrics exporter); this server appends
them to the registry's output (controller and work-queue metrics) and answers `/healthz`.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from sriovop.runtime.serving import parse_bind_address

log = structlog.get_logger(__name__)


class TextCollector(Protocol):
    """What the server appends to the registry's output (VfStatsCollector, the metrics exporter's)."""

    def render(self) -> str: ...

    def close(self) -> None: ...


class MetricsServer:
    """`GET /metrics` (VF counters + registry) and `GET /healthz`, on a daemon thread."""

    def __init__(self, address: str, collector: TextCollector, registry: CollectorRegistry | None = None) -> None:
        self.address = address
        self.collector = collector
        self.registry = registry
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def body(self) -> bytes:
        head = generate_latest(self.registry) if self.registry is not None else b""
        return head + self.collector.render().encode()

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].rstrip("/")
                if path == "/metrics":
                    try:
                        code, body, ctype = 200, owner.body(), CONTENT_TYPE_LATEST
                    except Exception as exc:  # a scrape must never take the daemon down
                        log.warning("metrics scrape failed", error=str(exc))
                        code, body, ctype = 500, f"scrape failed: {exc}\n".encode(), "text/plain"
                elif path == "/healthz":
                    code, body, ctype = 200, b"ok\n", "text/plain"
                else:
                    code, body, ctype = 404, b"not found\n", "text/plain"
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        host, port = parse_bind_address(self.address)
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="daemon-metrics", daemon=True)
        self._thread.start()
        log.info("metrics endpoint serving", address=self.address, port=self.port)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("metrics server is not started")
        return int(self._server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self.collector.close()
