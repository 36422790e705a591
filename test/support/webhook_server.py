"""Run the webhook server in-process over real TLS, and talk to it like the API server does."""

from __future__ import annotations

import http.client
import json
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sriovop.devcluster.certs import CertificateAuthority, KeyPair
from sriovop.webhook.cluster_view import ClusterView
from sriovop.webhook.handler import AdmissionHandler
from sriovop.webhook.server import WebhookServer, server_ssl_context
from sriovop.webhook.settings import WebhookSettings
from sriovop.webhook.switches_source import SwitchesSource


@dataclass
class Running:
    server: WebhookServer
    ca_pem: bytes
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        return ctx

    def connection(self, timeout: float = 10.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.client_context(), timeout=timeout)

    def post(self, path: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None,
             conn: http.client.HTTPSConnection | None = None) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        own = conn is None
        c = conn or self.connection()
        try:
            c.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
            response = c.getresponse()
            raw = response.read()
            try:
                return response.status, json.loads(raw)
            except ValueError:
                return response.status, raw.decode(errors="replace")
        finally:
            if own:
                c.close()


@contextmanager
def running_webhook(view: ClusterView, settings: WebhookSettings, serving: KeyPair | None = None,
                    ca_pem: bytes | None = None, host: str = "127.0.0.1",
                    switches: SwitchesSource | None = None) -> Iterator[Running]:
    """Serve on a free port; `serving`/`ca_pem` default to a throwaway CA (use the control plane's
    `issue_serving_cert` when the API server must trust it); `switches` feeds the pod injector."""
    if serving is None:
        ca = CertificateAuthority("webhook-test-ca")
        serving, ca_pem = ca.issue_server([host]), ca.cert_pem
    assert ca_pem is not None
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = serving.write(Path(tmp), "webhook")
        ctx = server_ssl_context(cert, key)
    server = WebhookServer((host, 0), AdmissionHandler(view, settings, switches), ctx)
    server.start_background()
    try:
        yield Running(server, ca_pem, host, server.port)
    finally:
        server.shutdown()
        server.server_close()
