"""The webhook exports when its serving certificate expires, following the file through a rotation.

Host: none (certificates made here with cryptography, read through the real registry).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import REGISTRY

from sriovop.webhook.certmetrics import NAME, SERVED_CERTIFICATE


def _pem(days: int) -> tuple[bytes, float]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "operator-webhook-service")])
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    end = now + dt.timedelta(days=days)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(end)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), end.timestamp()


@pytest.fixture
def cert_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tls.crt"
    SERVED_CERTIFICATE.watch(path)
    yield path
    SERVED_CERTIFICATE.watch(None)


def test_expiry_follows_the_file_through_a_rotation(cert_file: Path) -> None:
    pem, end = _pem(1)
    other, _ = _pem(3)
    cert_file.write_bytes(pem + other)  # a chain: the leaf comes first
    assert REGISTRY.get_sample_value(NAME) == end
    pem, end = _pem(30)
    cert_file.write_bytes(pem)
    assert REGISTRY.get_sample_value(NAME) == end


def test_unreadable_file_gives_no_sample_instead_of_a_wrong_one(cert_file: Path) -> None:
    assert REGISTRY.get_sample_value(NAME) is None  # not written yet
    cert_file.write_text("not a certificate")
    assert REGISTRY.get_sample_value(NAME) is None
