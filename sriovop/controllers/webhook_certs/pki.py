"""The certificate arithmetic of the self-managed webhook PKI, as pure functions of (inputs, now).

One CA signs a serving certificate per admission server. Three rules keep admission working through
every rotation (the same ones KubeVirt's virt-operator follows):
- a certificate is renewed once `RENEW_FRACTION` of its lifetime has passed, or earlier when 20% of
  it is shorter than the delivery margin (settings.py), so the new one reaches every server before
  the old one expires;
- the CA bundle the API server trusts holds the current CA *and* the earlier CAs (until they expire,
  or until every server has presented a certificate of the current CA for a while: the controller
  decides), so a server still presenting a certificate of the previous CA stays trusted;
- a serving certificate never outlives the CA that signed it (its notAfter is clamped).

ECDSA P-256 keys: generated in microseconds and accepted by every kube-apiserver.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Renew a CA or a serving certificate when this fraction of its lifetime has passed.
RENEW_FRACTION = 0.8
#: notBefore is set this far in the past (at most a tenth of the lifetime) so that a peer whose clock
#: lags a little accepts a new certificate.
BACKDATE = datetime.timedelta(minutes=5)


def backdate(lifetime: datetime.timedelta) -> datetime.timedelta:
    return min(BACKDATE, lifetime / 10)


@dataclass(frozen=True)
class CertAndKey:
    """A certificate and its PKCS#8 PEM private key."""

    cert: x509.Certificate
    key_pem: bytes

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the private key is not an ECDSA key")
        return key


def _new_key() -> tuple[ec.EllipticCurvePrivateKey, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    return key, pem


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_cert_sign=cert_sign, crl_sign=cert_sign,
                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                         key_agreement=False, encipher_only=False, decipher_only=False)


def new_ca(common_name: str, lifetime: datetime.timedelta, now: datetime.datetime) -> CertAndKey:
    """A self-signed CA valid from `now - backdate(lifetime)` to `now + lifetime`."""
    key, key_pem = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - backdate(lifetime)).not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertAndKey(cert, key_pem)


def issue_serving(ca: CertAndKey, dns_names: Sequence[str], lifetime: datetime.timedelta,
                  now: datetime.datetime) -> CertAndKey:
    """A serving certificate for `dns_names` (the CN is the first that fits its 64 characters; clients
    match the SANs), signed by `ca`, valid for `lifetime` but never past the CA's own notAfter."""
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    key, key_pem = _new_key()
    ca_key = ca.private_key()
    not_after = min(now + lifetime, ca.cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _common_name(dns_names))]))
        .issuer_name(ca.cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - backdate(lifetime)).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return CertAndKey(cert, key_pem)


def _common_name(names: Sequence[str]) -> str:
    return next((n for n in names if len(n) <= 64), names[-1][:64])


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names a client may use for a Service; kube-apiserver calls `<service>.<namespace>.svc`."""
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local",
            f"{service}.{namespace}", service]


def dns_names(cert: x509.Certificate) -> list[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return list(san.get_values_for_type(x509.DNSName))


def renew_at(cert: x509.Certificate, fraction: float = RENEW_FRACTION, *,
             margin: datetime.timedelta = datetime.timedelta(0)) -> datetime.datetime:
    """When `fraction` of the certificate's lifetime (notBefore → notAfter) has passed, or earlier so
    that at least `margin` is left before it expires (the time a renewed certificate needs to reach
    every server: on a cluster the kubelet's Secret sync plus the webhook's reload interval)."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return min(start + (end - start) * fraction, end - margin)


def signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    if cert.issuer != ca.subject:
        return False
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def load_pair(cert_pem: bytes | None, key_pem: bytes | None) -> CertAndKey | None:
    """The pair, or None when either part is missing, unparsable, or the key does not match."""
    if not cert_pem or not key_pem:
        return None
    try:
        pair = CertAndKey(x509.load_pem_x509_certificate(cert_pem), key_pem)
        key = pair.private_key()
    except ValueError:
        return None
    mine = key.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    theirs = pair.cert.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo)
    return pair if mine == theirs else None


def parse_bundle(pem: bytes | None) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle; an unparsable bundle counts as empty."""
    if not pem:
        return []
    try:
        return list(x509.load_pem_x509_certificates(pem))
    except ValueError:
        return []


def merge_bundle(current: x509.Certificate, others: Iterable[x509.Certificate],
                 now: datetime.datetime) -> list[x509.Certificate]:
    """`current` first, then every other CA that has not expired yet, each once, newest first."""
    seen = {current.fingerprint(hashes.SHA256())}
    kept: list[x509.Certificate] = []
    for cert in others:
        fp = cert.fingerprint(hashes.SHA256())
        if fp in seen or cert.not_valid_after_utc <= now or not _is_ca(cert):
            continue
        seen.add(fp)
        kept.append(cert)
    kept.sort(key=lambda c: c.not_valid_before_utc, reverse=True)
    return [current, *kept]


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def bundle_pem(certs: Iterable[x509.Certificate]) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def contains(bundle: Iterable[x509.Certificate], cert: x509.Certificate) -> bool:
    fp = cert.fingerprint(hashes.SHA256())
    return any(c.fingerprint(hashes.SHA256()) == fp for c in bundle)
