"""A plain-HTTP server on loopback for tests that need a real socket and HTTP/1.1 framing but no
cluster: each GET is answered by a function of its path, and every request line's target is recorded."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[str], tuple[int, bytes]]


@contextmanager
def loopback_http(answer: Answer) -> Iterator[tuple[str, list[str]]]:
    """Yields the server's base URL and the list of request targets (path and query, or the absolute
    URL a proxy is sent) in the order they arrived. Keep-alive is on, as an API server's is."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(self.path)
            status, body = answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
