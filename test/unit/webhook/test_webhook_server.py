"""The HTTPS server: routes, TLS floor, bad requests answered with 400, concurrency, survival."""

from __future__ import annotations

import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from sriovop.devcluster.certs import CertificateAuthority
from sriovop.webhook.handler import MUTATING_PATH, POD_MUTATING_PATH, VALIDATING_PATH, AdmissionHandler
from sriovop.webhook.server import MAX_BODY_BYTES, WebhookServer
from sriovop.webhook.tls import CertReloader, server_ssl_context
from test.support.poll import wait_for
from test.support.webhook_objects import SETTINGS, default_cluster, policy, review
from test.support.webhook_server import Running, running_webhook


@pytest.fixture(scope="module")
def hook() -> Iterator[Running]:
    with running_webhook(default_cluster(), SETTINGS) as running:
        yield running


def test_readyz_and_unknown_paths(hook: Running) -> None:
    conn = hook.connection()
    conn.request("GET", "/readyz")
    response = conn.getresponse()
    assert (response.status, response.read()) == (200, b"ok")
    status, body = hook.post("/nope", review("Pod", {}))
    assert status == 404 and "no admission endpoint at /nope" in body["error"]


def test_all_three_routes_answer_reviews(hook: Running) -> None:
    for path in (MUTATING_PATH, VALIDATING_PATH, POD_MUTATING_PATH):
        status, body = hook.post(path, review("SriovNetworkNodePolicy", policy()))
        assert status == 200, body
        assert body["kind"] == "AdmissionReview" and body["response"]["allowed"] is True


@pytest.mark.parametrize("body", [b"", b"not json", b"[]", b'{"apiVersion": "v1"}',
                                  json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
                                  b"\xff\xfe\x00"])
def test_malformed_bodies_get_400(hook: Running, body: bytes) -> None:
    status, answer = hook.post(VALIDATING_PATH, body)
    assert status == 400
    assert answer["error"]


def test_oversized_and_lying_content_length_get_400(hook: Running) -> None:
    status, answer = hook.post(VALIDATING_PATH, b"x" * (MAX_BODY_BYTES + 1))
    assert status == 400 and "Content-Length" in answer["error"]
    conn = hook.connection()
    conn.putrequest("POST", VALIDATING_PATH)
    conn.putheader("Content-Length", "-5")
    conn.endheaders()
    assert conn.getresponse().status == 400
    conn = hook.connection()
    conn.putrequest("POST", VALIDATING_PATH)
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    conn.send(b"0\r\n\r\n")
    assert conn.getresponse().status == 400
    assert hook.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", policy()))[0] == 200


def test_tls_floor_is_1_2_and_garbage_does_not_hurt(hook: Running) -> None:
    assert hook.server.ssl_context.minimum_version == ssl.TLSVersion.TLSv1_2
    ctx = hook.client_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection((hook.host, hook.port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname=hook.host) as tls:
        assert tls.version() == "TLSv1.2"
    with socket.create_connection((hook.host, hook.port), timeout=5) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256)))
    idle = socket.create_connection((hook.host, hook.port), timeout=5)  # connects, never handshakes
    try:
        assert hook.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", policy()))[0] == 200
    finally:
        idle.close()


def test_a_handshake_cut_short_is_one_line_without_a_traceback(hook: Running) -> None:
    """A client hanging up mid-handshake (a load balancer's probe, an API server's dropped dial) is
    routine: one debug event naming the client and the TLS error, no traceback, nothing at error level."""
    with capture_logs() as logs:
        with socket.create_connection((hook.host, hook.port), timeout=5) as raw:
            raw.sendall(bytes.fromhex("160301"))  # the start of a TLS record, then the connection ends
        closed = wait_for(lambda: [e for e in logs if e["event"] == "connection_closed"],
                          what="the server's connection_closed event")
    assert closed[0]["log_level"] == "debug" and closed[0]["client"] == hook.host
    assert "EOF" in closed[0]["error"] or "reset" in closed[0]["error"], closed[0]
    assert all("exc_info" not in e for e in logs), logs
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


def test_concurrent_requests_on_kept_alive_connections(hook: Running) -> None:
    failures: list[str] = []

    def worker(n: int) -> None:
        conn = hook.connection()
        try:
            for i in range(25):
                body = review("SriovNetworkNodePolicy", policy(numVfs=65 if (n + i) % 2 else 4))
                status, answer = hook.post(VALIDATING_PATH, body, conn=conn)
                expected = (n + i) % 2 == 0
                if status != 200 or answer["response"]["allowed"] is not expected or \
                        answer["response"]["uid"] != body["request"]["uid"]:
                    failures.append(f"{n}/{i}: {status} {answer}")
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures[:3]


def test_metrics_count_outcomes(hook: Running) -> None:
    hook.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", policy(numVfs=65)))
    conn = hook.connection()
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 200
    assert 'sriovop_webhook_requests_total{outcome="denied",path="/validating-custom-resource"}' in text


def _handshake(port: int, ca_pem: bytes, max_version: ssl.TLSVersion | None = None) -> str:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    if max_version is not None:
        ctx.maximum_version = max_version
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return str(tls.version())


def test_tls13_floor_and_certificate_rotation(tmp_path: Path) -> None:
    first, second = CertificateAuthority("first-ca"), CertificateAuthority("second-ca")
    cert, key = first.issue_server(["127.0.0.1"]).write(tmp_path, "serving")
    ctx = server_ssl_context(cert, key, "VersionTLS13")
    server = WebhookServer(("127.0.0.1", 0), AdmissionHandler(default_cluster(), SETTINGS), ctx)
    server.start_background()
    try:
        assert _handshake(server.port, first.cert_pem) == "TLSv1.3"
        with pytest.raises(ssl.SSLError):
            _handshake(server.port, first.cert_pem, ssl.TLSVersion.TLSv1_2)
        reloader = CertReloader(ctx, cert, key, interval=3600)
        assert reloader.check() is False  # nothing changed yet
        rotated = second.issue_server(["127.0.0.1"])
        key.write_bytes(rotated.key_pem)
        cert.write_bytes(rotated.cert_pem)
        os.utime(cert, (time.time() + 5, time.time() + 5))
        assert reloader.check() is True
        assert _handshake(server.port, second.cert_pem) == "TLSv1.3"
        with pytest.raises(ssl.SSLCertVerificationError):
            _handshake(server.port, first.cert_pem)
    finally:
        server.shutdown()
        server.server_close()


def test_bad_tls_settings_are_refused(tmp_path: Path) -> None:
    cert, key = CertificateAuthority().issue_server(["127.0.0.1"]).write(tmp_path, "serving")
    with pytest.raises(ValueError, match="VersionTLS10"):
        server_ssl_context(cert, key, "VersionTLS10")
    with pytest.raises(ValueError, match="no usable cipher"):
        server_ssl_context(cert, key, ciphers="NOT-A-CIPHER")
