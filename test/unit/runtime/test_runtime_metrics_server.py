"""`metrics_server`: one HTTP server for the registry plus text-rendered families, and `/healthz`.

Host: none (a server on 127.0.0.1 with a free port).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from prometheus_client import CollectorRegistry, Gauge
from structlog.testing import capture_logs

from sriovop.runtime.serving import HttpServer, LoggingHTTPServer, metrics_server


class _Text:
    def __init__(self) -> None:
        self.fail = False

    def render(self) -> str:
        if self.fail:
            raise OSError("sysfs went away")
        return '# TYPE sriov_vf_rx_bytes counter\nsriov_vf_rx_bytes{pf="ens1f0",vf="0"} 42\n'


@pytest.fixture
def served() -> Iterator[tuple[HttpServer, _Text]]:
    registry = CollectorRegistry()
    Gauge("demo_gauge", "a gauge", registry=registry).set(3)
    text = _Text()
    server = metrics_server("127.0.0.1:0", text, registry)
    server.start()
    yield server, text
    server.stop()


def _get(server: HttpServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_registry_then_text_families_and_healthz(served: tuple[HttpServer, _Text]) -> None:
    server, _ = served
    code, body = _get(server, "/metrics")
    assert code == 200
    assert body.index("demo_gauge 3.0") < body.index('sriov_vf_rx_bytes{pf="ens1f0",vf="0"} 42')
    assert _get(server, "/healthz")[0] == 200
    assert _get(server, "/nothing")[0] == 404


def test_a_failing_scrape_answers_500_and_the_server_keeps_serving(served: tuple[HttpServer, _Text]) -> None:
    server, text = served
    text.fail = True
    code, body = _get(server, "/metrics")
    assert code == 500 and "sysfs went away" in body
    text.fail = False
    assert _get(server, "/metrics")[0] == 200


def test_a_client_that_hangs_up_is_one_debug_line_and_a_bug_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """socketserver's own handle_error prints a traceback to stderr, outside the structured logs: a
    probe that hung up before its answer was written printed one. A broken connection is one debug
    line; anything else a handler let escape is an error with its traceback; nothing goes to stderr."""
    server = LoggingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    try:
        with capture_logs() as logs:
            for exc in (BrokenPipeError(32, "Broken pipe"), ValueError("a handler's bug")):
                try:
                    raise exc
                except Exception:
                    server.handle_error(None, ("127.0.0.1", 40000))
    finally:
        server.server_close()
    assert [(e["event"], e["log_level"], "exc_info" in e) for e in logs] == [
        ("connection_closed", "debug", False), ("request_failed", "error", True)]
    assert "Broken pipe" in logs[0]["error"] and logs[0]["client"] == "127.0.0.1"
    assert capsys.readouterr().err == ""
