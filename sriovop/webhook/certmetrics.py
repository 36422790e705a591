"""`sriovop_webhook_certificate_expiry_timestamp_seconds`: when the certificate this webhook serves expires.

Read from the serving certificate file at scrape time, so the value follows every rotation
`CertReloader` picks up (whoever issues it: the operator, cert-manager, OpenShift's service CA or a
Secret you provide). The alert "webhook certificate near expiry" compares it with `time()`; the
operator renews at 80% of the lifetime, so a value within a day of now means renewal is not happening.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import structlog
from cryptography import x509
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = structlog.get_logger(__name__)

NAME = "sriovop_webhook_certificate_expiry_timestamp_seconds"


def not_after(pem: bytes) -> float:
    """Expiry (Unix seconds) of the first certificate of a PEM chain: the leaf the server presents."""
    return x509.load_pem_x509_certificate(pem).not_valid_after_utc.timestamp()


class ServedCertificateCollector(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cert_file: Path | None = None

    def watch(self, cert_file: Path | None) -> None:
        with self._lock:
            self._cert_file = cert_file

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(NAME, "Expiry of the serving certificate this webhook presents, as a Unix "
                                         "timestamp (read from its file at scrape time).")
        with self._lock:
            path = self._cert_file
        if path is not None:
            try:
                family.add_metric([], not_after(path.read_bytes()))
            except (OSError, ValueError) as exc:  # mid-rotation or unreadable: no sample rather than a wrong one
                log.warning("cannot read the serving certificate's expiry", file=str(path), error=str(exc))
        yield family


#: The process's collector, registered once in the registry `/metrics` serves.
SERVED_CERTIFICATE = ServedCertificateCollector()
REGISTRY.register(SERVED_CERTIFICATE)
