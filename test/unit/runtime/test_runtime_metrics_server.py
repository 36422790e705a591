"""`metrics_server`: one HTTP server for the registry plus text-rendered families, and `/healthz`.

Host: none (a server on 127.0.0.1 with a free port).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge

from sriovop.runtime.serving import HttpServer, metrics_server


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
