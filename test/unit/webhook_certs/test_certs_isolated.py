"""The operator's certificate controller: the decisions in a child process, the API calls in this one.
No cluster: a fake API and a hand-driven clock; the child is a real `python -m` process."""

from __future__ import annotations

import base64
import datetime
import subprocess
import sys
from typing import Any

import pytest
from cryptography import x509
from structlog.testing import capture_logs

from sriovop.controllers.webhook_certs import CertSettings, default_targets, isolated, pki
from sriovop.controllers.webhook_certs.controller import BUNDLE_KEY
from sriovop.controllers.webhook_certs.isolated import IsolatedCertReconciler
from sriovop.controllers.webhook_certs.pipe import PARENT_GONE
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import SECRET, Kind
from sriovop.runtime.leaderelection.elector import NotLeaderError
from test.support.controllers_fake_api import FakeApi
from test.unit.webhook_certs.test_certs_controller import ALL_CONFIGS, NS, SETTINGS, T0, Clock

S = datetime.timedelta(seconds=1)
SERVING = ("operator-webhook-cert", "network-resources-injector-cert")


class CountingPopen(subprocess.Popen[bytes]):
    started = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).started += 1
        super().__init__(*args, **kwargs)


@pytest.fixture
def popen(monkeypatch: pytest.MonkeyPatch) -> type[CountingPopen]:
    CountingPopen.started = 0
    monkeypatch.setattr(isolated.subprocess, "Popen", CountingPopen)
    return CountingPopen


def _setup(api: FakeApi | None = None, settings: CertSettings = SETTINGS
           ) -> tuple[FakeApi, Clock, IsolatedCertReconciler]:
    api, clock = api or FakeApi(), Clock()
    for kind, name in ALL_CONFIGS:
        api.add(kind, {"metadata": {"name": name}, "webhooks": [{"name": "w", "clientConfig": {}}]})
    return api, clock, IsolatedCertReconciler(api, NS, settings, default_targets(*SERVING), clock=clock)


def _cert(api: FakeApi, name: str, key: str = "tls.crt") -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(api.get(SECRET, name, NS)["data"][key]))


def test_the_child_decides_with_the_parents_clock_and_the_parent_writes(popen: type[CountingPopen]) -> None:
    api, _, r = _setup()
    result = r.reconcile()
    assert popen.started == 1
    ca = _cert(api, SETTINGS.ca_secret)
    assert ca.not_valid_before_utc < T0 < ca.not_valid_after_utc  # the fake clock reached the child
    for secret in SERVING:
        serving = _cert(api, secret)
        assert pki.signed_by(serving, ca) and serving.not_valid_after_utc == T0 + 200 * S
    for kind, name in ALL_CONFIGS:
        bundle = base64.b64decode(api.get(kind, name)["webhooks"][0]["clientConfig"]["caBundle"])
        assert pki.parse_bundle(bundle) == [ca]
    assert ("create", "Secret", SETTINGS.ca_secret) in api.writes
    assert result.requeue_after == SETTINGS.propagation_delay.total_seconds()  # the new CA's propagation


def _settled(clock: Clock, r: IsolatedCertReconciler) -> None:
    """Past the first CA's propagation: the next pass writes nothing and is remembered."""
    r.reconcile()
    clock.now += SETTINGS.propagation_delay
    r.reconcile()


def test_at_rest_a_pass_reads_and_starts_no_process_until_something_changes(popen: type[CountingPopen]) -> None:
    api, clock, r = _setup()
    _settled(clock, r)
    started, writes = popen.started, len(api.writes)
    assert started == 2
    for _ in range(5):  # up to T0 + 110 s: the serving certificates are renewed from T0 + 156 s
        clock.now += 20 * S
        result = r.reconcile()
        assert result.requeue_after is not None and 0 < result.requeue_after <= 60
    assert (popen.started, len(api.writes)) == (started, writes)
    api.delete(SECRET, SERVING[0], NS)
    r.reconcile()
    assert popen.started == started + 1
    assert pki.signed_by(_cert(api, SERVING[0]), _cert(api, SETTINGS.ca_secret))


def test_a_decision_that_falls_due_starts_the_child_without_any_change(popen: type[CountingPopen]) -> None:
    api, clock, r = _setup()
    _settled(clock, r)
    first = _cert(api, SERVING[0])
    renew = pki.renew_at(first)
    clock.now = renew - S
    r.reconcile()
    assert popen.started == 2 and _cert(api, SERVING[0]) == first
    clock.now = renew
    r.reconcile()
    assert popen.started == 3
    renewed = _cert(api, SERVING[0])
    assert renewed != first and renewed.not_valid_after_utc == renew + 200 * S
    assert pki.parse_bundle(base64.b64decode(api.get(SECRET, SETTINGS.ca_secret, NS)["data"][BUNDLE_KEY])) == [
        _cert(api, SETTINGS.ca_secret)]


class ConflictOnce(FakeApi):
    def __init__(self, kind: Kind) -> None:
        super().__init__()
        self.kind = kind
        self.conflicted = False

    def update(self, kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
        if kind == self.kind and not self.conflicted:
            self.conflicted = True
            raise Conflict(409, "the object has been modified")
        return super().update(kind, obj)


def test_an_api_error_the_decisions_do_not_handle_fails_the_pass_with_that_error(popen: type[CountingPopen]) -> None:
    kind = ALL_CONFIGS[0][0]
    api, _, r = _setup(ConflictOnce(kind))
    with pytest.raises(Conflict, match="has been modified"):
        r.reconcile()
    r.reconcile()  # the controller's retry
    ca = _cert(api, SETTINGS.ca_secret)
    bundle = base64.b64decode(api.get(kind, ALL_CONFIGS[0][1])["webhooks"][0]["clientConfig"]["caBundle"])
    assert pki.parse_bundle(bundle) == [ca]


def test_the_operator_process_does_not_import_cryptography() -> None:
    code = ("import sys, sriovop.operator.app, sriovop.controllers.webhook_certs.isolated; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cryptography', 'cffi')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


class LeaseLostMidPass(FakeApi):
    """The fenced client of a replica that lost its lease: its writes raise, as NotLeaderError does."""

    def create(self, kind: Kind, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        raise NotLeaderError("namespaced: refusing POST: this replica does not hold a fresh leader lease")


def test_a_pass_the_parent_ends_leaves_the_child_quiet(popen: type[CountingPopen],
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    _, _, r = _setup(LeaseLostMidPass())
    with capture_logs() as logs, pytest.raises(NotLeaderError):
        r.reconcile()
    assert popen.started == 1
    err = capfd.readouterr().err
    assert "Traceback" not in err, err  # the child's stderr is this process's
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


def test_a_child_whose_parent_is_gone_exits_with_its_code_and_no_traceback() -> None:
    done = subprocess.run([sys.executable, "-m", isolated.CHILD_MODULE], input=b"", capture_output=True,
                          timeout=60)
    assert (done.returncode, done.stderr) == (PARENT_GONE, b"")
