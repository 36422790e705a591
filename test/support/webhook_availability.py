"""Measure how long SR-IOV writes are refused: a thread keeps making one admission-checked write.

The write is a dry-run create of a SriovNetwork (it goes through both admission webhooks, which have
`failurePolicy: Fail`, and stores nothing). A refusal window is a run of consecutive failed attempts,
measured from the start of its first attempt to the end of its last; the figure reported is the
longest window, 0 when nothing was refused.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field

from cryptography import x509

from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.runtime.client import Client


@dataclass(frozen=True)
class Attempt:
    start: float
    end: float
    error: str | None  # None: admitted


@dataclass
class WriteProbe:
    kube: Client
    namespace: str
    attempts: list[Attempt] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _write(self) -> str | None:
        network = {"metadata": {"name": f"probe-{uuid.uuid4().hex[:8]}", "namespace": self.namespace},
                   "spec": {"resourceName": "intelnics", "networkNamespace": "default", "vlan": 0}}
        try:
            self.kube.create(SRIOV_NETWORK, network, dry_run=True)
        except Exception as exc:  # any refusal counts: webhook unreachable, TLS failure, timeout
            return f"{type(exc).__name__}: {exc}"
        return None

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.monotonic()
            error = self._write()
            self.attempts.append(Attempt(start, time.monotonic(), error))
            self._stop.wait(0.05)

    def __enter__(self) -> WriteProbe:
        self._thread = threading.Thread(target=self._run, name="write-probe", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)

    def admitted_since(self, since: float) -> int:
        return sum(1 for a in list(self.attempts) if a.start >= since and a.error is None)

    def refusals(self) -> list[Attempt]:
        return [a for a in self.attempts if a.error is not None]


def longest_refusal(attempts: list[Attempt]) -> float:
    longest, first = 0.0, None
    for attempt in attempts:
        if attempt.error is None:
            first = None
            continue
        if first is None:
            first = attempt.start
        longest = max(longest, attempt.end - first)
    return longest


def served_certificate(address: str, port: int) -> x509.Certificate:
    """The certificate a TLS server presents at `address:port` right now (not verified: the caller
    compares it with what it expects)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection((address, port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)
