"""Who provides the admission webhooks' certificates, and for how long they live.

The mode is chosen from upstream's variables, so an upstream Deployment or helm values keep their
meaning, and the operator provides the certificates itself where upstream expects nothing to:
- `CLUSTER_TYPE=openshift`: OpenShift's service CA (annotations on the configurations and Services);
- `ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED=true`: cert-manager injects the CA from
  Certificates named like their Secrets (upstream's limitation);
- `ADMISSION_CONTROLLERS_CERTIFICATES_{OPERATOR,INJECTOR}_CA_CRT` set (base64 PEM): the user provides
  the Secrets and the CA ("custom", upstream's plain-Kubernetes mode);
- otherwise **self-managed** (the default on a plain cluster): the operator creates and rotates a CA
  and the serving certificates (controllers/webhook_certs/controller.py).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import enum
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from sriovop.api.v1 import consts

ENV_CERT_MANAGER_ENABLED = "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED"
ENV_OPERATOR_WEBHOOK_CA = "ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT"
ENV_INJECTOR_CA = "ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_CA_CRT"
ENV_CA_SECRET = "ADMISSION_CONTROLLERS_CERTIFICATES_CA_SECRET_NAME"
ENV_CA_LIFETIME = "ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME"
ENV_CERT_LIFETIME = "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME"
ENV_DELIVERY_MARGIN = "ADMISSION_CONTROLLERS_CERTIFICATES_DELIVERY_MARGIN"

DEFAULT_CA_SECRET = "sriov-network-operator-webhook-ca"
#: KubeVirt's defaults: a week for the CA, a day for serving certificates.
DEFAULT_CA_LIFETIME = datetime.timedelta(days=7)
DEFAULT_CERT_LIFETIME = datetime.timedelta(hours=24)
#: Shortest duration the variables accept at all (the lifetimes are further bounded by the margin).
MIN_LIFETIME = datetime.timedelta(seconds=10)
#: How long a renewed serving certificate may take to be served by every webhook pod. The kubelet
#: delivers an updated Secret to a mounted volume at its next pod sync (`syncFrequency`, 1 min by
#: default, plus jitter, measured 30-50 s on the development cluster) and the webhook re-reads its files
#: every `--tls-reload-interval` (10 s): 5 min is several times both. A serving certificate is renewed
#: at least this long before it expires, a CA twice this long (plus the propagation delay) before, and
#: a previous CA leaves `caBundle` only once every serving certificate has come from the current CA
#: for this long.
DEFAULT_DELIVERY_MARGIN = datetime.timedelta(minutes=5)
MIN_DELIVERY_MARGIN = datetime.timedelta(seconds=1)
#: Upper bound of how long a new CA sits in the published bundle before it signs serving certificates
#: (API servers must have seen it first).
MAX_PROPAGATION_DELAY = datetime.timedelta(seconds=10)


class CertMode(enum.StrEnum):
    SELF_MANAGED = "self-managed"
    CERT_MANAGER = "cert-manager"
    OPENSHIFT = "openshift"
    CUSTOM = "custom"


class CertSettingsError(ValueError):
    """A certificate variable is malformed; the message names it."""


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(name: str, raw: str, minimum: datetime.timedelta = MIN_LIFETIME) -> datetime.timedelta:
    """Go's duration syntax (`168h`, `1h30m`, `90s`), what upstream's operators take."""
    text = raw.strip()
    pos, seconds = 0, 0.0
    for m in _DURATION_PART.finditer(text):
        if m.start() != pos:
            break
        seconds += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not text or pos != len(text):
        raise CertSettingsError(f"{name}={raw!r}: not a duration (examples: 168h, 24h, 90m, 45s)")
    value = datetime.timedelta(seconds=seconds)
    if value < minimum:
        raise CertSettingsError(f"{name}={raw!r}: must be at least {_go(minimum)}")
    return value


def _go(value: datetime.timedelta) -> str:
    """A duration as the variables take it (`300s` → `5m0s`, Go's spelling)."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


def _ca_from_env(name: str, env: Mapping[str, str]) -> bytes | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise CertSettingsError(f"{name} must be a base64-encoded PEM CA bundle: {exc}") from exc


@dataclass(frozen=True)
class CertSettings:
    mode: CertMode = CertMode.SELF_MANAGED
    ca_secret: str = DEFAULT_CA_SECRET
    ca_lifetime: datetime.timedelta = DEFAULT_CA_LIFETIME
    cert_lifetime: datetime.timedelta = DEFAULT_CERT_LIFETIME
    delivery_margin: datetime.timedelta = DEFAULT_DELIVERY_MARGIN
    #: custom mode only: the CA bundles the user gave.
    operator_webhook_ca: bytes | None = None
    injector_ca: bytes | None = None

    def __post_init__(self) -> None:
        if self.cert_lifetime > self.ca_lifetime:
            raise CertSettingsError(
                f"{ENV_CERT_LIFETIME} ({_go(self.cert_lifetime)}) must not be longer than {ENV_CA_LIFETIME} "
                f"({_go(self.ca_lifetime)}): a serving certificate cannot outlive its CA")
        if self.delivery_margin < MIN_DELIVERY_MARGIN:
            raise CertSettingsError(f"{ENV_DELIVERY_MARGIN} ({_go(self.delivery_margin)}) must be at least "
                                    f"{_go(MIN_DELIVERY_MARGIN)}")
        # Renewal no earlier than half-way: a shorter lifetime could not be rotated safely.
        for name, lifetime, margin in ((ENV_CERT_LIFETIME, self.cert_lifetime, self.serving_margin),
                                       (ENV_CA_LIFETIME, self.ca_lifetime, self.ca_margin)):
            if lifetime < 2 * margin:
                raise CertSettingsError(
                    f"{name} ({_go(lifetime)}) is too short to rotate safely: it must be at least "
                    f"{_go(2 * margin)}, twice the {_go(margin)} a renewal must leave before expiry for "
                    f"the kubelet to deliver the renewed Secret to the webhook pods ({ENV_DELIVERY_MARGIN}, "
                    f"{_go(self.delivery_margin)})")

    @property
    def serving_margin(self) -> datetime.timedelta:
        """A serving certificate is renewed at least this long before it expires."""
        return self.delivery_margin

    @property
    def ca_margin(self) -> datetime.timedelta:
        """A CA is rotated at least this long before it expires: the new CA propagates to the API
        servers, then the serving certificates it signs must be delivered while the previous ones
        (never valid past the previous CA) still are; twice the delivery margin leaves room for a
        serving renewal that was itself due."""
        return 2 * self.delivery_margin + self.propagation_delay

    @property
    def propagation_delay(self) -> datetime.timedelta:
        """How long a new CA is published in the bundle before it signs: at most 10 s, and a
        twentieth of the shortest time a previous serving certificate is certain to remain valid."""
        return min(MAX_PROPAGATION_DELAY, min(self.cert_lifetime, self.ca_lifetime * 0.2) * 0.05)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, ca_lifetime: str | None = None,
                 cert_lifetime: str | None = None) -> CertSettings:
        """`ca_lifetime`/`cert_lifetime` (command-line flags) win over the environment."""
        e = os.environ if env is None else env
        operator_ca = _ca_from_env(ENV_OPERATOR_WEBHOOK_CA, e)
        injector_ca = _ca_from_env(ENV_INJECTOR_CA, e)
        if (e.get(consts.ENV_CLUSTER_TYPE) or "").lower() == "openshift":
            mode = CertMode.OPENSHIFT
        elif (e.get(ENV_CERT_MANAGER_ENABLED) or "").strip().lower() == "true":
            mode = CertMode.CERT_MANAGER
        elif operator_ca or injector_ca:
            mode = CertMode.CUSTOM
        else:
            mode = CertMode.SELF_MANAGED
        ca_raw = ca_lifetime or e.get(ENV_CA_LIFETIME, "")
        cert_raw = cert_lifetime or e.get(ENV_CERT_LIFETIME, "")
        margin_raw = e.get(ENV_DELIVERY_MARGIN, "")
        return cls(
            mode=mode,
            ca_secret=e.get(ENV_CA_SECRET) or DEFAULT_CA_SECRET,
            ca_lifetime=parse_duration(ENV_CA_LIFETIME, ca_raw) if ca_raw else DEFAULT_CA_LIFETIME,
            cert_lifetime=parse_duration(ENV_CERT_LIFETIME, cert_raw) if cert_raw else DEFAULT_CERT_LIFETIME,
            delivery_margin=(parse_duration(ENV_DELIVERY_MARGIN, margin_raw, MIN_DELIVERY_MARGIN) if margin_raw
                             else DEFAULT_DELIVERY_MARGIN),
            operator_webhook_ca=operator_ca, injector_ca=injector_ca,
        )
