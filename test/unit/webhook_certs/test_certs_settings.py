"""Which certificate mode the environment selects (upstream's variables), and the lifetimes."""

from __future__ import annotations

import base64
import datetime

import pytest

from sriovop.controllers.webhook_certs.settings import (
    CertMode,
    CertSettings,
    CertSettingsError,
    parse_duration,
)


@pytest.mark.parametrize(("env", "mode"), [
    ({}, CertMode.SELF_MANAGED),
    ({"CLUSTER_TYPE": "kubernetes"}, CertMode.SELF_MANAGED),
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED": "false"}, CertMode.SELF_MANAGED),
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED": "True"}, CertMode.CERT_MANAGER),
    ({"CLUSTER_TYPE": "openshift"}, CertMode.OPENSHIFT),
    ({"CLUSTER_TYPE": "openshift", "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED": "true"},
     CertMode.OPENSHIFT),  # upstream: the service CA wins on OpenShift
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT": base64.b64encode(b"PEM").decode()}, CertMode.CUSTOM),
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT": ""}, CertMode.SELF_MANAGED),
])
def test_mode_from_upstreams_variables(env: dict[str, str], mode: CertMode) -> None:
    assert CertSettings.from_env(env).mode is mode


def test_custom_mode_keeps_the_given_bundles() -> None:
    s = CertSettings.from_env({"ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT": base64.b64encode(b"A").decode(),
                               "ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_CA_CRT": base64.b64encode(b"B").decode()})
    assert (s.operator_webhook_ca, s.injector_ca) == (b"A", b"B")


def test_bad_ca_bundle_names_the_variable() -> None:
    with pytest.raises(CertSettingsError, match="ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_CA_CRT"):
        CertSettings.from_env({"ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_CA_CRT": "%%%"})


def test_lifetimes_default_to_a_week_and_a_day_and_flags_win_over_the_environment() -> None:
    s = CertSettings.from_env({})
    assert (s.ca_lifetime, s.cert_lifetime) == (datetime.timedelta(days=7), datetime.timedelta(hours=24))
    s = CertSettings.from_env({"ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME": "720h",
                               "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME": "1h30m"})
    assert (s.ca_lifetime, s.cert_lifetime) == (datetime.timedelta(days=30), datetime.timedelta(minutes=90))
    s = CertSettings.from_env({"ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME": "720h"}, ca_lifetime="48h")
    assert s.ca_lifetime == datetime.timedelta(hours=48)


@pytest.mark.parametrize(("raw", "message"), [
    ("7d", "not a duration"), ("", "not a duration"), ("10", "not a duration"), ("5s", "must be at least 10s"),
    ("1h 30m", "not a duration"),
])
def test_bad_durations_name_the_variable_and_the_reason(raw: str, message: str) -> None:
    with pytest.raises(CertSettingsError, match=f"LIFETIME={raw!r}: {message}"):
        parse_duration("X_LIFETIME", raw)


def test_serving_certificates_cannot_outlive_the_ca() -> None:
    with pytest.raises(CertSettingsError, match=r"CERT_LIFETIME .* must not be longer than"):
        CertSettings.from_env({"ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME": "1h",
                               "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME": "2h"})


def test_propagation_delay_is_short_and_scales_down_with_short_lifetimes() -> None:
    assert CertSettings().propagation_delay == datetime.timedelta(seconds=10)
    short = CertSettings(ca_lifetime=datetime.timedelta(seconds=100), cert_lifetime=datetime.timedelta(seconds=40),
                         delivery_margin=datetime.timedelta(seconds=5))
    assert short.propagation_delay == datetime.timedelta(seconds=1)  # 5% of min(40 s, 20% of 100 s)


@pytest.mark.parametrize(("env", "message"), [
    # The serving certificate must be renewed at least the 5 min delivery margin before it expires,
    # no earlier than half-way: 10 min at least.
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME": "60s"},
     r"ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME \(1m0s\) is too short to rotate safely: it must be at "
     r"least 10m0s, .* \(ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN, 5m0s\)"),
    # The CA: twice the margin plus the propagation delay (10 s), no earlier than half-way.
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME": "20m",
      "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME": "15m"},
     r"ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME \(20m0s\) is too short to rotate safely: it must be at "
     r"least 20m20s"),
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME": "30m",
      "ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN": "20m"}, r"CERT_LIFETIME \(30m0s\) is too short"),
    ({"ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN": "0s"},
     r"ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN='0s': must be at least 1s"),
])
def test_lifetimes_too_short_to_rotate_safely_are_refused_naming_the_setting(env: dict[str, str],
                                                                             message: str) -> None:
    with pytest.raises(CertSettingsError, match=message):
        CertSettings.from_env(env)


def test_delivery_margin_defaults_to_five_minutes_and_sets_both_renewal_margins() -> None:
    assert CertSettings().delivery_margin == datetime.timedelta(minutes=5)
    s = CertSettings.from_env({"ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME": "20m",
                               "ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME": "1h",
                               "ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN": "2m"})
    assert s.serving_margin == datetime.timedelta(minutes=2)
    assert s.ca_margin == datetime.timedelta(minutes=4) + s.propagation_delay
