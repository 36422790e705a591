"""The webhook PKI's arithmetic: validity, SANs, renewal time, the CA bundle across rotations."""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography import x509

from sriovop.controllers.webhook_certs import pki

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def test_ca_is_a_ca_valid_for_its_lifetime_and_backdated() -> None:
    ca = pki.new_ca("test-ca", 7 * DAY, NOW)
    assert ca.cert.not_valid_before_utc == NOW - pki.BACKDATE
    short = pki.new_ca("short", datetime.timedelta(seconds=60), NOW)
    assert short.cert.not_valid_before_utc == NOW - datetime.timedelta(seconds=6)  # a tenth of a short lifetime
    assert NOW < pki.renew_at(short.cert) < NOW + datetime.timedelta(seconds=48)
    assert ca.cert.not_valid_after_utc == NOW + 7 * DAY
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert pki.signed_by(ca.cert, ca.cert)


def test_serving_certificate_names_the_service_and_chains_to_its_ca() -> None:
    ca = pki.new_ca("test-ca", 7 * DAY, NOW)
    names = pki.service_dns_names("operator-webhook-service", "sriov-network-operator")
    assert names[0] == "operator-webhook-service.sriov-network-operator.svc"  # what kube-apiserver dials
    serving = pki.issue_serving(ca, names, DAY, NOW)
    assert pki.dns_names(serving.cert) == names
    assert serving.cert.not_valid_after_utc == NOW + DAY
    assert pki.signed_by(serving.cert, ca.cert)
    assert not pki.signed_by(serving.cert, pki.new_ca("other", DAY, NOW).cert)
    eku = serving.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in eku
    assert serving.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_a_tls_client_trusting_the_bundle_accepts_the_serving_certificate() -> None:
    """The real check: Python's TLS stack (OpenSSL) verifies chain and hostname as a client does."""
    old = pki.new_ca("old", 7 * DAY, datetime.datetime.now(datetime.UTC))
    new = pki.new_ca("new", 7 * DAY, datetime.datetime.now(datetime.UTC))
    serving = pki.issue_serving(old, ["svc.ns.svc"], DAY, datetime.datetime.now(datetime.UTC))
    bundle = pki.bundle_pem(pki.merge_bundle(new.cert, [old.cert], datetime.datetime.now(datetime.UTC)))
    client = ssl.create_default_context(cadata=bundle.decode())
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "c").write_bytes(serving.cert_pem)
        (Path(tmp) / "k").write_bytes(serving.key_pem)
        server.load_cert_chain(str(Path(tmp) / "c"), str(Path(tmp) / "k"))
    a, b = ssl.MemoryBIO(), ssl.MemoryBIO()
    c_obj = client.wrap_bio(a, b, server_hostname="svc.ns.svc")
    s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    s_obj = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):  # pump the handshake between the two in-memory endpoints
        for obj in (c_obj, s_obj):
            try:
                obj.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(b.read())
        a.write(s_out.read())
    assert c_obj.getpeercert()["subjectAltName"] == (("DNS", "svc.ns.svc"),)


def test_serving_certificate_never_outlives_its_ca() -> None:
    ca = pki.new_ca("test-ca", DAY, NOW)
    serving = pki.issue_serving(ca, ["a.b.svc"], 2 * DAY, NOW + 12 * datetime.timedelta(hours=1))
    assert serving.cert.not_valid_after_utc == ca.cert.not_valid_after_utc


def test_renewal_at_eighty_percent_of_the_lifetime() -> None:
    ca = pki.new_ca("test-ca", datetime.timedelta(hours=100) - pki.BACKDATE, NOW)
    assert pki.renew_at(ca.cert) == NOW - pki.BACKDATE + datetime.timedelta(hours=80)
    assert pki.renew_at(ca.cert, 0.5) == NOW - pki.BACKDATE + datetime.timedelta(hours=50)
    # 20% of the lifetime is shorter than the margin: renewed the margin before expiry instead.
    assert pki.renew_at(ca.cert, margin=datetime.timedelta(hours=30)) == ca.cert.not_valid_after_utc - \
        datetime.timedelta(hours=30)
    assert pki.renew_at(ca.cert, margin=datetime.timedelta(hours=1)) == pki.renew_at(ca.cert)


def test_bundle_keeps_unexpired_previous_cas_current_first_and_each_once() -> None:
    oldest = pki.new_ca("oldest", DAY, NOW - 2 * DAY)  # expired
    old = pki.new_ca("old", 7 * DAY, NOW - 6 * DAY)
    new = pki.new_ca("new", 7 * DAY, NOW)
    not_a_ca = pki.issue_serving(new, ["x.y.svc"], DAY, NOW).cert
    bundle = pki.merge_bundle(new.cert, [old.cert, oldest.cert, old.cert, new.cert, not_a_ca], NOW)
    assert bundle == [new.cert, old.cert]
    assert pki.contains(bundle, old.cert) and not pki.contains(bundle, oldest.cert)
    assert pki.parse_bundle(pki.bundle_pem(bundle)) == bundle
    # Once the previous CA expires it leaves the bundle.
    later = old.cert.not_valid_after_utc
    assert pki.merge_bundle(new.cert, bundle, later) == [new.cert]


def test_load_pair_rejects_missing_garbage_and_mismatched_keys() -> None:
    ca = pki.new_ca("ca", DAY, NOW)
    other = pki.new_ca("other", DAY, NOW)
    assert pki.load_pair(ca.cert_pem, ca.key_pem) is not None
    assert pki.load_pair(ca.cert_pem, other.key_pem) is None
    assert pki.load_pair(b"garbage", ca.key_pem) is None
    assert pki.load_pair(None, ca.key_pem) is None
    assert pki.parse_bundle(b"not pem") == []


def test_serving_certificate_needs_a_name() -> None:
    with pytest.raises(ValueError, match="at least one DNS name"):
        pki.issue_serving(pki.new_ca("ca", DAY, NOW), [], DAY, NOW)


def test_long_namespaces_fit_the_common_name_and_keep_every_san() -> None:
    names = pki.service_dns_names("network-resources-injector-service", "a-rather-long-namespace-name-for-sriov")
    serving = pki.issue_serving(pki.new_ca("ca", DAY, NOW), names, DAY, NOW)
    assert pki.dns_names(serving.cert) == names
    (cn,) = serving.cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
    assert len(str(cn.value)) <= 64 and str(cn.value) in names
