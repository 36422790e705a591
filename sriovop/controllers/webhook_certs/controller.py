"""Self-managed webhook certificates: the operator is its own CA, as KubeVirt's virt-operator is.

On a cluster without cert-manager or OpenShift's service CA nothing else would create the TLS Secrets
the admission servers mount, and with `failurePolicy: Fail` every SR-IOV write would be refused.
One reconcile (a single request, repeated at the next deadline and at least every `resync` seconds;
leader-gated like every controller, its writes fenced by the lease):

1. the CA Secret (`tls.crt`, `tls.key`, `ca-bundle.crt`): created, or rotated at 80% of the CA's
   lifetime (earlier when that would leave less than `settings.ca_margin`); deleting it forces a
   rotation. The bundle keeps the earlier CAs (also those found in the configurations) until every
   serving certificate comes from the current CA and has for `delivery_margin` (by then every
   webhook pod serves it), or until they expire;
2. the bundle is written into `caBundle` of every webhook of the configurations that exist (the
   operator-config controller creates them without one in this mode and triggers this controller);
3. each admission server's Secret (`kubernetes.io/tls`: `tls.crt`, `tls.key`, `ca.crt`) gets a
   certificate for its Service's DNS names, renewed at 80% of its lifetime, or `delivery_margin`
   before it expires when that is earlier (the kubelet delivers a changed Secret to the pod only at its
   next sync, up to about a minute later, and the server re-reads it within 10 s); deleting the Secret
   re-issues it. The Secret records when its certificate was issued. After a CA rotation the
   new CA signs only once every configuration carries it and `propagation_delay` has passed (the
   API servers' informers must have seen it), so no server ever presents a certificate that an API
   server does not trust yet; the old certificate stays valid meanwhile.

Both Secrets live in the operator namespace; the webhook server reloads the mounted files when they
change (sriovop/webhook/tls.py), so no pod restarts.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from sriovop.controllers.webhook_certs import pki
from sriovop.controllers.webhook_certs.base import CertControllerBase, ServingTarget
from sriovop.runtime.controller import Request, Result
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import SECRET, Kind

log = structlog.get_logger(__name__)

#: When the current CA was published (RFC 3339); serving certificates wait for propagation from here.
PUBLISHED_ANNOTATION = "sriovnetwork.openshift.io/ca-published-at"
#: When a serving Secret's certificate was issued (RFC 3339): a previous CA is retired from the bundle
#: once every serving certificate has come from the current CA for the delivery margin.
ISSUED_ANNOTATION = "sriovnetwork.openshift.io/certificate-issued-at"
BUNDLE_KEY = "ca-bundle.crt"
LABELS = {"app.kubernetes.io/managed-by": "sriov-network-operator",
          "app.kubernetes.io/component": "webhook-certificates"}


@dataclass(frozen=True)
class CaState:
    ca: pki.CertAndKey
    bundle: list[Any]  # x509.Certificate, current first
    published_at: datetime.datetime

    @property
    def bundle_pem(self) -> bytes:
        return pki.bundle_pem(self.bundle)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _data(secret: Mapping[str, Any] | None, key: str) -> bytes | None:
    raw = ((secret or {}).get("data") or {}).get(key)
    if not raw:
        return None
    try:
        return base64.b64decode(raw)
    except ValueError:
        return None


def _bundle_of(config: Mapping[str, Any] | None) -> list[Any]:
    out: list[Any] = []
    for hook in (config or {}).get("webhooks") or []:
        raw = (hook.get("clientConfig") or {}).get("caBundle")
        if raw:
            try:
                out += pki.parse_bundle(base64.b64decode(raw))
            except ValueError:
                continue
    return out


def _parse_time(raw: str | None) -> datetime.datetime | None:
    if not raw:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(raw)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


class WebhookCertReconciler(CertControllerBase):
    """The decisions in this process (tests, and the operator's child process in `isolated.py`)::

        certs = WebhookCertReconciler(client, namespace, CertSettings.from_env(),
                                      default_targets(render.operator_webhook_secret, render.injector_secret))
        certs.setup(mgr)
    """

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, req: Request | None = None) -> Result:
        now = self.clock()
        return self.requeue_until(self.decide(now), now)

    def decide(self, now: datetime.datetime) -> datetime.datetime:
        """One pass: read, rotate, publish and issue what is due; returns when the next decision is due
        (the resync period aside), which depends only on what was read and written."""
        configs = self._read_configurations()
        trusted = [ca for config in configs.values() for ca in _bundle_of(config)]
        state = self.ensure_ca(now, trusted)
        changed = [self.publish_bundle(kind, name, config, state)
                   for (kind, name), config in configs.items() if config is not None]
        # The API servers must see a bundle before a certificate depends on it: after a CA rotation,
        # and after any bundle write (a late one, e.g. when the API server was unreachable at rotation).
        ready_at = state.published_at + self.settings.propagation_delay
        if any(changed):
            ready_at = max(ready_at, now + self.settings.propagation_delay)
        may_sign = now >= ready_at
        deadlines = [pki.renew_at(state.ca.cert, margin=self.settings.ca_margin)]
        deadlines += [c.not_valid_after_utc for c in state.bundle[1:]]  # drop expired CAs from the bundle
        if not may_sign:
            deadlines.append(ready_at)
        served_since: list[datetime.datetime | None] = []
        for target in self.targets:
            renew, since = self.ensure_serving(target, state, may_sign, now)
            served_since.append(since)
            # A renewal that waits for the new CA to propagate is looked at again when it has.
            deadlines.append(renew if may_sign else max(renew, ready_at))
        if len(state.bundle) > 1 and served_since and None not in served_since:
            retire_at = max(s for s in served_since if s is not None) + self.settings.delivery_margin
            if now >= retire_at:
                self.retire_previous_cas(now)
                deadlines.append(now)  # the serving Secrets' ca.crt follows at the next pass
            else:
                deadlines.append(retire_at)
        return min(deadlines)

    def retire_previous_cas(self, now: datetime.datetime) -> None:
        """Every webhook pod serves a certificate of the current CA by now: the earlier CAs leave the
        bundle (a CA rotated because it may be compromised stops being trusted, not days later)."""
        state = self.ensure_ca(now, retire=True)
        for (kind, name), config in self._read_configurations().items():
            if config is not None:
                self.publish_bundle(kind, name, config, state)
        log.info("previous webhook CAs retired from caBundle", secret=self.settings.ca_secret)

    def _read_configurations(self) -> dict[tuple[Kind, str], dict[str, Any] | None]:
        out: dict[tuple[Kind, str], dict[str, Any] | None] = {}
        for target in self.targets:
            for kind, name in target.configurations:
                try:
                    out[(kind, name)] = dict(self.client.get(kind, name))
                except NotFound:
                    out[(kind, name)] = None
        return out

    # -- the CA ------------------------------------------------------------------------------------

    def ensure_ca(self, now: datetime.datetime, trusted: list[Any] | None = None, *,
                  retire: bool = False) -> CaState:
        """`trusted`: CAs the configurations trust now; they stay in the bundle like earlier CAs of
        the Secret (a lost CA Secret, or a switch from user-provided certificates, refuses nothing).
        `retire`: drop every CA but the current one (unless this pass rotates it)."""
        name = self.settings.ca_secret
        try:
            secret: Mapping[str, Any] | None = self.client.get(SECRET, name, self.namespace)
        except NotFound:
            secret = None
        current = pki.load_pair(_data(secret, "tls.crt"), _data(secret, "tls.key"))
        previous = [] if retire else pki.parse_bundle(_data(secret, BUNDLE_KEY)) + list(trusted or [])
        annotations = ((secret or {}).get("metadata") or {}).get("annotations") or {}
        published = _parse_time(annotations.get(PUBLISHED_ANNOTATION))
        if current is None or now >= pki.renew_at(current.cert, margin=self.settings.ca_margin):
            reason = "missing or invalid" if current is None else "renewal due"
            old = [current.cert] if current is not None else []
            current = pki.new_ca(f"sriov-network-operator-webhook-ca@{int(now.timestamp())}",
                                 self.settings.ca_lifetime, now)
            published = now
            log.info("webhook CA rotated", secret=name, reason=reason,
                     not_after=current.cert.not_valid_after_utc.isoformat())
            previous = old + previous
        state = CaState(current, pki.merge_bundle(current.cert, previous, now),
                        published or current.cert.not_valid_before_utc)
        desired = {"tls.crt": _b64(current.cert_pem), "tls.key": _b64(current.key_pem),
                   BUNDLE_KEY: _b64(state.bundle_pem)}
        self._write_secret(secret, name, desired, {PUBLISHED_ANNOTATION: state.published_at.isoformat()})
        return state

    # -- the configurations ------------------------------------------------------------------------

    def publish_bundle(self, kind: Kind, name: str, config: dict[str, Any], state: CaState) -> bool:
        """Write the bundle into every webhook of an existing configuration; True when it changed.
        An update that races with the operator-config controller's fails on its resourceVersion and
        is retried."""
        encoded = _b64(state.bundle_pem)
        hooks = [dict(h) for h in config.get("webhooks") or []]
        if all((h.get("clientConfig") or {}).get("caBundle") == encoded for h in hooks):
            return False
        for hook in hooks:
            hook["clientConfig"] = {**(hook.get("clientConfig") or {}), "caBundle": encoded}
        try:
            self.client.update(kind, {**config, "webhooks": hooks})
        except NotFound:
            return False
        log.info("webhook caBundle updated", kind=kind.kind, name=name, cas=len(state.bundle))
        return True

    # -- serving certificates ----------------------------------------------------------------------

    def ensure_serving(self, target: ServingTarget, state: CaState, may_sign: bool,
                       now: datetime.datetime) -> tuple[datetime.datetime, datetime.datetime | None]:
        """Issue or renew the target's certificate when needed; returns when to look again, and since
        when its certificate comes from the current CA (None: it does not yet)."""
        try:
            secret: Mapping[str, Any] | None = self.client.get(SECRET, target.secret, self.namespace)
        except NotFound:
            secret = None
        names = pki.service_dns_names(target.service, self.namespace)
        pair = pki.load_pair(_data(secret, "tls.crt"), _data(secret, "tls.key"))
        reason = ""
        if pair is None:
            reason = "missing or invalid"
        elif pki.dns_names(pair.cert) != names:
            reason = "DNS names changed"
        elif now >= pair.cert.not_valid_after_utc:
            reason = "expired"
        elif not pki.signed_by(pair.cert, state.ca.cert):
            reason = "signed by a previous CA" if may_sign else ""
        elif now >= pki.renew_at(pair.cert, margin=self.settings.serving_margin):
            reason = "renewal due" if may_sign else ""
        annotations = ((secret or {}).get("metadata") or {}).get("annotations") or {}
        # Unknown issue time (a Secret of an earlier version): counted from now, the safe side.
        issued = _parse_time(annotations.get(ISSUED_ANNOTATION)) or now
        if reason:
            pair = pki.issue_serving(state.ca, names, self.settings.cert_lifetime, now)
            issued = now
            log.info("webhook serving certificate issued", secret=target.secret, reason=reason,
                     not_after=pair.cert.not_valid_after_utc.isoformat())
        assert pair is not None  # issued above when it was missing
        desired = {"tls.crt": _b64(pair.cert_pem), "tls.key": _b64(pair.key_pem), "ca.crt": _b64(state.bundle_pem)}
        self._write_secret(secret, target.secret, desired, {ISSUED_ANNOTATION: issued.isoformat()})
        current = pki.signed_by(pair.cert, state.ca.cert)
        return pki.renew_at(pair.cert, margin=self.settings.serving_margin), issued if current else None

    # -- writes ------------------------------------------------------------------------------------

    def _write_secret(self, live: Mapping[str, Any] | None, name: str, data: dict[str, str],
                      annotations: dict[str, str]) -> None:
        if live is None:
            self.client.create(SECRET, {
                "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": name, "namespace": self.namespace, "labels": dict(LABELS),
                             "annotations": annotations},
                "data": data}, self.namespace)
            log.info("webhook certificate secret created", secret=name)
            return
        meta = dict(live["metadata"])
        live_annotations = meta.get("annotations") or {}
        if live.get("data") == data and all(live_annotations.get(k) == v for k, v in annotations.items()):
            return
        meta["annotations"] = {**live_annotations, **annotations}
        meta["labels"] = {**(meta.get("labels") or {}), **LABELS}
        meta.pop("managedFields", None)
        self.client.update(SECRET, {**live, "metadata": meta, "data": data})
