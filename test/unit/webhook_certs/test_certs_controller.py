"""The certificate controller's decisions, step by step on a fake API and a hand-driven clock."""

from __future__ import annotations

import base64
import datetime
from typing import Any

from cryptography import x509

from sriovop.api.v1 import consts
from sriovop.controllers.webhook_certs import CertSettings, default_targets, pki
from sriovop.controllers.webhook_certs.controller import BUNDLE_KEY, ISSUED_ANNOTATION, WebhookCertReconciler
from sriovop.runtime.kinds import MUTATING_WEBHOOK_CONFIGURATION, SECRET, VALIDATING_WEBHOOK_CONFIGURATION
from test.support.controllers_fake_api import FakeApi

NS = "sriov-network-operator"
T0 = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
S = datetime.timedelta(seconds=1)
# Propagation delay 10 s; 20% of each lifetime is longer than the margins (20 s, CA 50 s).
SETTINGS = CertSettings(ca_lifetime=1000 * S, cert_lifetime=200 * S, delivery_margin=20 * S)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime.datetime:
        return self.now


def _setup(*configs: tuple[Any, str]) -> tuple[FakeApi, Clock, WebhookCertReconciler]:
    api, clock = FakeApi(), Clock()
    for kind, name in configs:
        api.add(kind, {"metadata": {"name": name}, "webhooks": [
            {"name": "w", "clientConfig": {"service": {"name": "s", "namespace": NS}}}]})
    reconciler = WebhookCertReconciler(api, NS, SETTINGS, default_targets("operator-webhook-cert",
                                                                         "network-resources-injector-cert"),
                                       clock=clock)
    return api, clock, reconciler


def _secret_pem(api: FakeApi, name: str, key: str) -> bytes:
    return base64.b64decode(api.get(SECRET, name, NS)["data"][key])


def _cert(api: FakeApi, name: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(_secret_pem(api, name, "tls.crt"))


def _config_bundle(api: FakeApi, kind: Any, name: str) -> list[x509.Certificate]:
    hooks = api.get(kind, name)["webhooks"]
    bundles = {h["clientConfig"]["caBundle"] for h in hooks}
    assert len(bundles) == 1
    return pki.parse_bundle(base64.b64decode(bundles.pop()))


ALL_CONFIGS = ((VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
               (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
               (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME))


def _fresh_until(clock: Clock, r: WebhookCertReconciler, until: datetime.datetime) -> None:
    """Reconcile every 100 s (the serving certificates stay fresh) up to `until`, then once at it."""
    while clock.now < until:
        clock.now = min(clock.now + 100 * S, until)
        r.reconcile()


def test_creates_the_ca_and_both_serving_secrets_and_patches_every_configuration() -> None:
    api, _, r = _setup(*ALL_CONFIGS)
    result = r.reconcile()
    ca = _cert(api, SETTINGS.ca_secret)
    for secret, service in (("operator-webhook-cert", "operator-webhook-service"),
                            ("network-resources-injector-cert", "network-resources-injector-service")):
        obj = api.get(SECRET, secret, NS)
        assert obj["type"] == "kubernetes.io/tls"
        serving = _cert(api, secret)
        assert pki.dns_names(serving)[0] == f"{service}.{NS}.svc"
        assert pki.signed_by(serving, ca)
        assert serving.not_valid_after_utc == T0 + 200 * S
        assert pki.parse_bundle(_secret_pem(api, secret, "ca.crt")) == [ca]
    for kind, name in ALL_CONFIGS:
        assert _config_bundle(api, kind, name) == [ca]
    assert result.requeue_after is not None and 0 < result.requeue_after <= 60
    writes = len(api.writes)
    assert r.reconcile().requeue_after
    assert len(api.writes) == writes, "a second pass with nothing due must not write"


def test_missing_configurations_are_left_alone_and_patched_once_they_exist() -> None:
    api, _, r = _setup()
    r.reconcile()
    api.add(MUTATING_WEBHOOK_CONFIGURATION, {"metadata": {"name": consts.INJECTOR_WEBHOOK_CONFIG_NAME},
                                             "webhooks": [{"name": "w", "clientConfig": {}}]})
    r.reconcile()
    assert _config_bundle(api, MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME) == [
        _cert(api, SETTINGS.ca_secret)]


def test_serving_certificate_is_renewed_at_eighty_percent_by_the_same_ca() -> None:
    api, clock, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    first = _cert(api, "operator-webhook-cert")
    renew = pki.renew_at(first)
    clock.now = renew - S
    r.reconcile()
    assert _cert(api, "operator-webhook-cert") == first
    clock.now = renew
    r.reconcile()
    second = _cert(api, "operator-webhook-cert")
    assert second != first and pki.signed_by(second, _cert(api, SETTINGS.ca_secret))
    assert second.not_valid_after_utc == renew + 200 * S


def test_ca_rotation_keeps_the_old_ca_trusted_until_every_server_has_served_the_new_one_for_the_margin() -> None:
    api, clock, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    old_ca = _cert(api, SETTINGS.ca_secret)
    _fresh_until(clock, r, pki.renew_at(old_ca))
    new_ca = _cert(api, SETTINGS.ca_secret)
    assert new_ca != old_ca
    assert pki.parse_bundle(_secret_pem(api, SETTINGS.ca_secret, BUNDLE_KEY)) == [new_ca, old_ca]
    for kind, name in ALL_CONFIGS:
        assert _config_bundle(api, kind, name) == [new_ca, old_ca]
    # The serving certificates still come from the old CA: the API servers may not know the new one yet.
    serving_before = _cert(api, "operator-webhook-cert")
    assert pki.signed_by(serving_before, old_ca)
    assert serving_before.not_valid_after_utc > clock.now + SETTINGS.propagation_delay
    result = r.reconcile()
    assert result.requeue_after is not None and result.requeue_after <= SETTINGS.propagation_delay.total_seconds()
    assert pki.signed_by(_cert(api, "operator-webhook-cert"), old_ca)
    clock.now += SETTINGS.propagation_delay
    result = r.reconcile()
    reissued = clock.now
    for secret in ("operator-webhook-cert", "network-resources-injector-cert"):
        assert pki.signed_by(_cert(api, secret), new_ca)
        assert pki.parse_bundle(_secret_pem(api, secret, "ca.crt")) == [new_ca, old_ca]
        assert api.get(SECRET, secret, NS)["metadata"]["annotations"][ISSUED_ANNOTATION] == reissued.isoformat()
    # The old CA leaves the bundle once the kubelets had the delivery margin to bring the new
    # certificates to every pod (long before it expires); the controller looks again right then.
    assert result.requeue_after == SETTINGS.delivery_margin.total_seconds()
    clock.now = reissued + SETTINGS.delivery_margin - S
    r.reconcile()
    assert _config_bundle(api, *ALL_CONFIGS[0]) == [new_ca, old_ca]
    clock.now = reissued + SETTINGS.delivery_margin
    r.reconcile()
    assert clock.now < old_ca.not_valid_after_utc
    for kind, name in ALL_CONFIGS:
        assert _config_bundle(api, kind, name) == [new_ca]
    assert pki.parse_bundle(_secret_pem(api, SETTINGS.ca_secret, BUNDLE_KEY)) == [new_ca]
    r.reconcile()
    for secret in ("operator-webhook-cert", "network-resources-injector-cert"):
        assert pki.parse_bundle(_secret_pem(api, secret, "ca.crt")) == [new_ca]


def test_a_lost_ca_secret_does_not_untrust_the_running_servers() -> None:
    api, _, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    old_ca = _cert(api, SETTINGS.ca_secret)
    api.delete(SECRET, SETTINGS.ca_secret, NS)
    r.reconcile()
    new_ca = _cert(api, SETTINGS.ca_secret)
    assert new_ca != old_ca
    for kind, name in ALL_CONFIGS:
        assert _config_bundle(api, kind, name) == [new_ca, old_ca]
    assert pki.signed_by(_cert(api, "operator-webhook-cert"), old_ca)


def test_deleting_the_ca_secret_rotates_everything_and_retires_the_old_ca_after_the_margin() -> None:
    api, clock, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    old_ca = _cert(api, SETTINGS.ca_secret)
    clock.now += 10 * S
    api.delete(SECRET, SETTINGS.ca_secret, NS)
    r.reconcile()
    new_ca = _cert(api, SETTINGS.ca_secret)
    clock.now += SETTINGS.propagation_delay
    r.reconcile()
    reissued = clock.now
    for secret in ("operator-webhook-cert", "network-resources-injector-cert"):
        assert pki.signed_by(_cert(api, secret), new_ca)
    clock.now = reissued + SETTINGS.delivery_margin - S
    r.reconcile()
    assert _config_bundle(api, *ALL_CONFIGS[2]) == [new_ca, old_ca]
    clock.now += S
    r.reconcile()
    for kind, name in ALL_CONFIGS:
        assert _config_bundle(api, kind, name) == [new_ca]


def test_a_serving_secret_without_its_issue_time_counts_from_now_before_a_ca_is_retired() -> None:
    """A Secret written by an earlier version: the pods may have received it just now."""
    api, clock, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    old_ca = _cert(api, SETTINGS.ca_secret)
    _fresh_until(clock, r, pki.renew_at(old_ca))
    clock.now += SETTINGS.propagation_delay
    r.reconcile()
    new_ca = _cert(api, SETTINGS.ca_secret)
    secret = api.get(SECRET, "operator-webhook-cert", NS)
    del secret["metadata"]["annotations"][ISSUED_ANNOTATION]
    api.update(SECRET, secret)
    clock.now += SETTINGS.delivery_margin - S
    r.reconcile()  # the injector's certificate is old enough, the operator webhook's counts from now
    assert _config_bundle(api, *ALL_CONFIGS[0]) == [new_ca, old_ca]
    clock.now += SETTINGS.delivery_margin - S
    r.reconcile()
    assert _config_bundle(api, *ALL_CONFIGS[0]) == [new_ca, old_ca]
    clock.now += S
    r.reconcile()
    assert _config_bundle(api, *ALL_CONFIGS[0]) == [new_ca]


def test_a_deleted_or_corrupted_serving_secret_is_reissued_at_once() -> None:
    api, _, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    api.delete(SECRET, "operator-webhook-cert", NS)
    secret = api.get(SECRET, "network-resources-injector-cert", NS)
    secret["data"]["tls.key"] = base64.b64encode(b"junk").decode()
    api.update(SECRET, secret)
    r.reconcile()
    ca = _cert(api, SETTINGS.ca_secret)
    for name in ("operator-webhook-cert", "network-resources-injector-cert"):
        assert pki.load_pair(_secret_pem(api, name, "tls.crt"), _secret_pem(api, name, "tls.key")) is not None
        assert pki.signed_by(_cert(api, name), ca)


def test_no_certificate_of_the_new_ca_right_after_a_late_bundle_write() -> None:
    """A configuration (re)created without caBundle after the rotation: its API servers learn the new
    CA only now, so the new CA signs one propagation delay later, not at once."""
    api, clock, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    old_ca = _cert(api, SETTINGS.ca_secret)
    _fresh_until(clock, r, pki.renew_at(old_ca))
    kind, name = ALL_CONFIGS[2]
    api.delete(kind, name)
    api.add(kind, {"metadata": {"name": name}, "webhooks": [{"name": "w", "clientConfig": {}}]})
    clock.now += SETTINGS.propagation_delay
    result = r.reconcile()
    new_ca = _cert(api, SETTINGS.ca_secret)
    assert _config_bundle(api, kind, name) == [new_ca, old_ca]
    assert pki.signed_by(_cert(api, "network-resources-injector-cert"), old_ca)
    assert result.requeue_after == SETTINGS.propagation_delay.total_seconds()  # no busy loop meanwhile
    clock.now += SETTINGS.propagation_delay
    r.reconcile()
    assert pki.signed_by(_cert(api, "network-resources-injector-cert"), new_ca)


def test_a_renewal_due_during_propagation_waits_without_spinning() -> None:
    api, clock, r = _setup(*ALL_CONFIGS)
    r.reconcile()
    rotation = pki.renew_at(_cert(api, SETTINGS.ca_secret))
    _fresh_until(clock, r, rotation - 170 * S)
    api.delete(SECRET, "operator-webhook-cert", NS)
    r.reconcile()  # issued now: renewal due 156 s later, expiry 200 s later
    serving = _cert(api, "operator-webhook-cert")
    clock.now = rotation
    assert pki.renew_at(serving) < clock.now < serving.not_valid_after_utc
    result = r.reconcile()
    assert _cert(api, "operator-webhook-cert") == serving  # the new CA is not propagated yet
    assert result.requeue_after == SETTINGS.propagation_delay.total_seconds()
