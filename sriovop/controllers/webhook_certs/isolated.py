"""The certificate decisions in a short child process, so the operator never imports `cryptography`.

Parsing and signing X.509 needs the cryptography library, which costs the long-lived operator about
9 MiB for a controller that decides something a few times a year. Each pass that may decide runs
`python -m sriovop.controllers.webhook_certs.child`: the child runs `WebhookCertReconciler.decide` and
every API call it makes comes back over a pipe to this process, which performs it with the manager's
client (fenced by the lease like every other write) and returns the answer or the API error.

A pass that wrote nothing leaves what it read (each object's resourceVersion, or its absence) and when
its next decision is due. Until then a pass reads the same objects itself and, when none changed, has
nothing to decide (a decision depends only on those objects and the time), so at rest the operator
makes the same reads per resync as before and starts no process.
"""

from __future__ import annotations

import datetime
import logging
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import IO, Any

import structlog

from sriovop.controllers.webhook_certs.base import CertControllerBase
from sriovop.controllers.webhook_certs.pipe import PARENT_GONE, receive, send
from sriovop.logsetup import current_format
from sriovop.runtime.controller import Request, Result
from sriovop.runtime.errors import ApiError, NotFound, error_for
from sriovop.runtime.kinds import Kind

log = structlog.get_logger(__name__)

CHILD_MODULE = "sriovop.controllers.webhook_certs.child"
#: A child that has not finished by then is killed and the pass fails (the controller retries).
CHILD_TIMEOUT = 120.0

ObjectKey = tuple[Kind, str | None, str]  # kind, namespace, name


class ChildFailed(RuntimeError):
    """The child process ended without an answer (it crashed, or was killed at the timeout)."""


@dataclass
class _Reads:
    """What one pass read: each object's resourceVersion, "" for an object that did not exist."""

    versions: dict[ObjectKey, str] = field(default_factory=dict)
    wrote: bool = False


@dataclass(frozen=True)
class _Memo:
    versions: dict[ObjectKey, str]
    decision: datetime.datetime


def _version(obj: Any) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


class IsolatedCertReconciler(CertControllerBase):
    """The operator's certificate controller: `WebhookCertReconciler` in a child process."""

    _memo: _Memo | None = None

    def reconcile(self, req: Request | None = None) -> Result:
        now = self.clock()
        memo = self._memo
        if memo is not None and now < memo.decision and self._unchanged(memo.versions):
            return self.requeue_until(memo.decision, now)
        self._memo = None
        reads = _Reads()
        decision = self._run_child(now, reads)
        if not reads.wrote:
            self._memo = _Memo(reads.versions, decision)
        return self.requeue_until(decision, now)

    def _unchanged(self, versions: dict[ObjectKey, str]) -> bool:
        return all(self._read(key) == version for key, version in versions.items())

    def _read(self, key: ObjectKey) -> str:
        kind, namespace, name = key
        try:
            return _version(self.client.get(kind, name, namespace))
        except NotFound:
            return ""

    # -- the child ---------------------------------------------------------------------------------

    def _run_child(self, now: datetime.datetime, reads: _Reads) -> datetime.datetime:
        proc = subprocess.Popen([sys.executable, "-m", CHILD_MODULE], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        watchdog = threading.Timer(CHILD_TIMEOUT, proc.kill)
        watchdog.daemon = True
        watchdog.start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            send(proc.stdin, {"namespace": self.namespace, "settings": self.settings, "targets": self.targets,
                               "now": now, "level": logging.getLevelName(logging.getLogger().level).lower(),
                               "format": current_format()})
            return self._serve(proc.stdin, proc.stdout, reads)
        finally:
            watchdog.cancel()
            proc.stdin.close()
            proc.stdout.close()
            if proc.wait() not in (0, PARENT_GONE):
                log.warning("certificate child process failed", returncode=proc.returncode)

    def _serve(self, to_child: IO[bytes], from_child: IO[bytes], reads: _Reads) -> datetime.datetime:
        """Answer the child's API calls until it reports its decision or fails."""
        while True:
            try:
                message = receive(from_child)
            except EOFError:
                raise ChildFailed("the certificate child process ended without an answer") from None
            if "decision" in message:
                decision: datetime.datetime = message["decision"]
                return decision
            if "failed" in message:
                code, text, status = message["failed"]
                raise error_for(code, text, status) if code else ChildFailed(text)
            send(to_child, self._call(message["call"], reads))

    def _call(self, call: tuple[str, Kind, Any, str | None], reads: _Reads) -> dict[str, Any]:
        verb, kind, arg, namespace = call
        try:
            if verb == "get":
                obj = self.client.get(kind, arg, namespace)
                reads.versions[(kind, namespace, arg)] = _version(obj)
            elif verb == "update":
                obj = self.client.update(kind, arg)
                reads.wrote = True
            elif verb == "create":
                obj = self.client.create(kind, arg, namespace)
                reads.wrote = True
            else:
                raise ValueError(f"unknown call {verb!r}")
        except ApiError as err:
            if verb == "get" and isinstance(err, NotFound):
                reads.versions[(kind, namespace, arg)] = ""
            return {"error": (err.code, err.message, err.status)}
        return {"ok": obj}
