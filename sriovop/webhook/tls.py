"""Serving TLS for the webhook: a TLS 1.2+ context, upstream's TLS env knobs, and certificate rotation.

The operator (self-managed mode), cert-manager or OpenShift's service CA rotates the serving certificate
in its Secret, and the kubelet swaps the mounted files atomically (a new `..data` directory behind the
same file names); the webhook must pick the new one up without a restart, so `CertReloader` re-loads
the files into the same SSLContext when they change (new connections use the new certificate, open
ones keep theirs).
"""

from __future__ import annotations

import os
import ssl
import threading
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

#: Upstream's names (Go's crypto/tls constants) for TLS_MIN_VERSION / --tls-min-version.
TLS_VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}


def server_ssl_context(cert_file: str | Path, key_file: str | Path, min_version: str = "VersionTLS12",
                       ciphers: str | None = None) -> ssl.SSLContext:
    """`min_version` is one of TLS_VERSIONS; `ciphers` an OpenSSL cipher list for TLS 1.2 (TLS 1.3
    suites are not configurable in Python and are all strong)."""
    if min_version not in TLS_VERSIONS:
        raise ValueError(f"TLS minimum version {min_version!r} is not one of {sorted(TLS_VERSIONS)}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[min_version]
    if ciphers:
        try:
            ctx.set_ciphers(ciphers)
        except ssl.SSLError as exc:
            raise ValueError(f"TLS cipher list {ciphers!r} selects no usable cipher: {exc}") from None
    ctx.load_cert_chain(str(cert_file), str(key_file))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class CertReloader:
    """Polls the certificate and key files' mtimes and reloads them into `ctx` when either changes."""

    def __init__(self, ctx: ssl.SSLContext, cert_file: str | Path, key_file: str | Path,
                 interval: float = 10.0) -> None:
        self.ctx = ctx
        self.cert_file, self.key_file = Path(cert_file), Path(key_file)
        self.interval = interval
        self._stamp = self._mtimes()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _mtimes(self) -> tuple[tuple[int, int, int], ...]:
        """(inode, size, mtime) of both files, through the symlinks: a kubelet swap changes the inode
        even when the new files carry the same mtime."""
        try:
            stats = os.stat(self.cert_file), os.stat(self.key_file)
        except OSError:
            return ()
        return tuple((st.st_ino, st.st_size, st.st_mtime_ns) for st in stats)

    def check(self) -> bool:
        """Reload if the files changed; True when a new certificate was installed."""
        stamp = self._mtimes()
        if stamp == self._stamp or not stamp:
            return False
        try:
            self.ctx.load_cert_chain(str(self.cert_file), str(self.key_file))
        except (OSError, ssl.SSLError) as exc:
            # Mid-rotation the key and certificate may briefly disagree: retry at the next poll.
            log.warning("serving_cert_reload_failed", error=str(exc))
            return False
        self._stamp = stamp
        log.info("serving_cert_reloaded", cert=str(self.cert_file))
        return True

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.interval):
                self.check()

        self._thread = threading.Thread(target=loop, name="cert-reloader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
