"""Webhook availability on the installed cluster: how long SR-IOV writes are refused when the
operator-webhook pod is deleted (its DaemonSet recreates it), and during a forced rotation of the CA
and both serving certificates (which must refuse none).

Cluster: `sriovop dev cluster up --nodes 2`, operator installed by `kubectl apply -k` (see
test/support/incluster.py); no SR-IOV host is involved (admission only).
"""

from __future__ import annotations

import base64
import time
from functools import partial
from typing import Any

from cryptography import x509

from sriovop.api.v1 import consts
from sriovop.controllers.webhook_certs import CertSettings, pki
from sriovop.runtime.kinds import POD, SECRET, VALIDATING_WEBHOOK_CONFIGURATION
from test.support.incluster import NAMESPACE, Installed
from test.support.poll import wait_for
from test.support.webhook_availability import WriteProbe, longest_refusal, served_certificate

WEBHOOK_LABELS = {"app": "operator-webhook"}
INJECTOR_LABELS = {"app": "network-resources-injector"}
WEBHOOK_PORT = 6443  # the admission servers' containerPort (sriovop/render/workloads.py)
TIMEOUT_S = 420.0
#: CA Secret deleted → recreated at the operator's next resync (≤ 60 s) → serving certificates
#: re-issued after the propagation delay → delivered by the kubelet (≤ ~1 min) → re-read (≤ 10 s);
#: the old CA leaves caBundle the 5 min delivery margin later. Generous on a loaded machine.
ROTATION_TIMEOUT_S = 900.0


def _ready_webhook_pod(env: Installed, not_uid: str = "") -> dict[str, Any] | None:
    for pod in env.pods(NAMESPACE, WEBHOOK_LABELS):
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        if ready and pod["metadata"]["uid"] != not_uid and not pod["metadata"].get("deletionTimestamp"):
            return pod
    return None


def _admitting(probe: WriteProbe, since: float, count: int = 3) -> bool:
    return probe.admitted_since(since) >= count


def test_deleting_the_webhook_pod_refuses_writes_only_until_the_new_pod_serves(installed: Installed) -> None:
    old = wait_for(lambda: _ready_webhook_pod(installed), timeout=TIMEOUT_S, what="a Ready operator-webhook pod")
    with WriteProbe(installed.kube, NAMESPACE) as probe:
        wait_for(lambda: _admitting(probe, 0.0), timeout=TIMEOUT_S, what="writes admitted before the deletion")
        deleted_at = time.monotonic()
        installed.kube.delete(POD, old["metadata"]["name"], NAMESPACE)
        wait_for(lambda: _ready_webhook_pod(installed, not_uid=old["metadata"]["uid"]), timeout=TIMEOUT_S,
                 what="the recreated operator-webhook pod Ready", interval=0.5)
        ready_at = time.monotonic()
        wait_for(lambda: _admitting(probe, ready_at), timeout=TIMEOUT_S, what="writes admitted by the new pod")
    window = longest_refusal([a for a in probe.attempts if a.start >= deleted_at])
    print(f"webhook pod deleted: longest refused window {window:.2f}s "
          f"({len(probe.refusals())} refused of {len(probe.attempts)} writes)")
    # Refusals can only happen between the deletion and the new pod serving.
    assert all(deleted_at <= a.start <= ready_at for a in probe.refusals()), probe.refusals()[-1:]
    assert window <= ready_at - deleted_at


def _ca_secret_cert(env: Installed) -> x509.Certificate:
    data = env.kube.get(SECRET, CertSettings().ca_secret, NAMESPACE)["data"]["tls.crt"]
    return x509.load_pem_x509_certificate(base64.b64decode(data))


def _ca_bundle(env: Installed) -> list[x509.Certificate]:
    hooks = env.kube.get(VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME)["webhooks"]
    return pki.parse_bundle(base64.b64decode(hooks[0]["clientConfig"]["caBundle"]))


def _served_by_pods(env: Installed) -> dict[str, x509.Certificate]:
    """pod name → the certificate it presents at its pod IP (every pod of both admission servers)."""
    pods = env.pods(NAMESPACE, WEBHOOK_LABELS) + env.pods(NAMESPACE, INJECTOR_LABELS)
    return {p["metadata"]["name"]: served_certificate(p["status"]["podIP"], WEBHOOK_PORT) for p in pods
            if (p.get("status") or {}).get("podIP") and not p["metadata"].get("deletionTimestamp")}


def _all_served_by(env: Installed, ca: x509.Certificate, pods: set[str]) -> dict[str, x509.Certificate] | None:
    served = _served_by_pods(env)
    return served if set(served) == pods and all(pki.signed_by(c, ca) for c in served.values()) else None


def _new_ca(env: Installed, old: x509.Certificate) -> x509.Certificate | None:
    ca = _ca_secret_cert(env)
    return ca if ca != old else None


def test_a_forced_certificate_rotation_refuses_no_write(installed: Installed) -> None:
    """Deleting the CA Secret is the documented way to rotate now (manifests/README.md): the operator
    creates a new CA, publishes it beside the old one, re-issues both serving certificates, and retires
    the old CA once every pod has had the delivery margin to serve the new ones. Writes are made
    throughout; not one may be refused. Host: this machine's kubelets only (admission, no SR-IOV host)."""
    old_ca = _ca_secret_cert(installed)
    wait_for(lambda: _ready_webhook_pod(installed), timeout=TIMEOUT_S, what="a Ready operator-webhook pod")
    before = wait_for(partial(_served_by_pods, installed), timeout=TIMEOUT_S, what="both admission servers serving")
    assert len(before) == 2 and all(pki.signed_by(c, old_ca) for c in before.values()), before
    with WriteProbe(installed.kube, NAMESPACE) as probe:
        wait_for(lambda: _admitting(probe, 0.0), timeout=TIMEOUT_S, what="writes admitted before the rotation")
        started = time.monotonic()
        installed.kube.delete(SECRET, CertSettings().ca_secret, NAMESPACE)
        new_ca = wait_for(partial(_new_ca, installed, old_ca), timeout=ROTATION_TIMEOUT_S,
                          what="a new CA in the CA Secret", interval=1)
        bundle = wait_for(lambda: (b := _ca_bundle(installed)) and pki.contains(b, new_ca) and b,
                          timeout=ROTATION_TIMEOUT_S, what="the new CA in caBundle", interval=0.5)
        assert pki.contains(bundle, old_ca), "the old CA left caBundle before the pods served the new one"
        after = wait_for(partial(_all_served_by, installed, new_ca, set(before)), timeout=ROTATION_TIMEOUT_S,
                         what="every admission pod serving a certificate of the new CA", interval=1)
        served_at = time.monotonic()
        wait_for(lambda: not pki.contains(_ca_bundle(installed), old_ca), timeout=ROTATION_TIMEOUT_S,
                 what="the old CA retired from caBundle", interval=1)
        retired_at = time.monotonic()
        wait_for(lambda: _admitting(probe, retired_at), timeout=TIMEOUT_S, what="writes admitted after retirement")
    attempts = [a for a in probe.attempts if a.start >= started]
    window = longest_refusal(attempts)
    print(f"forced rotation: new certificates served after {served_at - started:.1f}s, old CA retired after "
          f"{retired_at - started:.1f}s; longest refused window {window:.2f}s "
          f"({sum(1 for a in attempts if a.error)} refused of {len(attempts)} writes)")
    for pod, cert in after.items():
        assert cert.serial_number != before[pod].serial_number, pod
    assert [a for a in attempts if a.error] == []
    assert window == 0.0
