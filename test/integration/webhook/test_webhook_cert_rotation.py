"""Self-managed webhook certificates through a real kube-apiserver, across forced rotations.

A private control plane runs with `--enable-aggregator-routing=true` (as the dev cluster's does), so
kube-apiserver calls the webhook Service at its endpoint address, verifying the serving certificate
against `caBundle` for the name `operator-webhook-service.<ns>.svc`, exactly as for a webhook pod.
The endpoint is this host's own address, where a `sriovop webhook` process serves the files of the
Secret the certificate controller writes (projected as the kubelet projects a Secret volume).

With a 60 s CA and 20 s serving certificates the controller renews the serving certificate about
every 16 s and rotates the CA after ~47 s. Meanwhile SR-IOV writes go through kube-apiserver and the
webhook back to back; the longest window in which one was refused is measured (and must be 0).
Runs on this host only (no simulated SR-IOV host, no guest).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from sriovop.api.v1.kinds import SRIOV_NETWORK_POOL_CONFIG
from sriovop.controllers.webhook_certs import CertSettings, ServingTarget, pki
from sriovop.controllers.webhook_certs.controller import WebhookCertReconciler
from sriovop.devcluster import ControlPlane
from sriovop.devcluster.process import free_port
from sriovop.render.webhook_configs import Endpoint, operator_webhook_configs
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError
from sriovop.runtime.manager import Manager
from test.conftest import CRD_DIR
from test.support.kube import apply_crds
from test.support.poll import wait_for
from test.support.secret_volume import SecretVolume
from test.support.webhook_availability import served_certificate
from test.support.webhook_objects import SUPPORTED_NIC_DATA

NS = "sriov-network-operator"
SERVICE = "operator-webhook-service"
SECRET = "operator-webhook-cert"
CONFIG = "sriovop-rotation-test"
# The files are projected within 0.2 s and re-read every 0.5 s here (no kubelet): a 4 s delivery margin.
SETTINGS = CertSettings(ca_lifetime=datetime.timedelta(seconds=60), cert_lifetime=datetime.timedelta(seconds=20),
                        delivery_margin=datetime.timedelta(seconds=4))
EVENTUALLY = 120.0


def host_address() -> str:
    """This host's first global IPv4 address (endpoint addresses may not be loopback)."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show", "scope", "global"], check=True,
                         capture_output=True, text=True).stdout
    for link in json.loads(out):
        for addr in link.get("addr_info") or []:
            return str(addr["local"])
    pytest.fail("this host has no global IPv4 address for the webhook endpoint")


@pytest.fixture(scope="module")
def routed_control_plane() -> Iterator[ControlPlane]:
    cp = ControlPlane(extra_apiserver_args=["--enable-aggregator-routing=true"]).start()
    try:
        apply_crds(cp.kubeconfig, sorted(CRD_DIR.glob("*.yaml")))
        yield cp
    finally:
        cp.stop()


def _service_at(client: Client, address: str, port: int) -> None:
    """A Service without selector whose endpoint is this host (the pod IP's stand-in)."""
    client.create(core.NAMESPACE, {"metadata": {"name": NS}})
    client.create(core.CONFIG_MAP, {"metadata": {"name": "supported-nic-ids", "namespace": NS},
                                    "data": SUPPORTED_NIC_DATA})
    client.create(core.SERVICE, {"metadata": {"name": SERVICE, "namespace": NS}, "spec": {
        "ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}]}})
    client.create(core.Kind("", "v1", "Endpoints", "endpoints"), {
        "metadata": {"name": SERVICE, "namespace": NS},
        "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]})
    client.create(core.Kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"), {
        "metadata": {"name": f"{SERVICE}-host", "namespace": NS, "labels": {"kubernetes.io/service-name": SERVICE}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]})


@dataclass
class Writes:
    """SR-IOV writes through kube-apiserver, back to back: (monotonic start, end, error or "")."""

    results: list[tuple[float, float, str]] = field(default_factory=list)

    def refused_windows(self) -> list[tuple[float, str]]:
        """Each run of refused writes: from the first refused write's start to the next admitted
        write's end (the time a user could not write), with the first error."""
        windows: list[tuple[float, str]] = []
        start: float | None = None
        first = ""
        for begin, end, error in self.results:
            if error and start is None:
                start, first = begin, error
            elif not error and start is not None:
                windows.append((end - start, first))
                start = None
        if start is not None:
            windows.append((self.results[-1][1] - start, first))
        return windows


def _write_loop(client: Client, stop: threading.Event, writes: Writes) -> None:
    i = 0
    while not stop.is_set():
        i += 1
        begin = time.monotonic()
        try:
            client.patch(SRIOV_NETWORK_POOL_CONFIG, "rotation", {"metadata": {"labels": {"write": str(i)}}}, NS)
            error = ""
        except ApiError as exc:
            error = str(exc)
        writes.results.append((begin, time.monotonic(), error))
        time.sleep(0.05)


def _expiry_on_metrics(address: str, port: int) -> float | None:
    """`sriovop_webhook_certificate_expiry_timestamp_seconds` as the webhook's /metrics serves it."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the webhook's CA is not the point here
    with urllib.request.urlopen(f"https://{address}:{port}/metrics", context=ctx, timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("sriovop_webhook_certificate_expiry_timestamp_seconds "):
                return float(line.rsplit(" ", 1)[1])
    return None


def _secret_cert(client: Client, name: str, key: str = "tls.crt") -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(client.get(core.SECRET, name, NS)["data"][key]))


def _bundle(client: Client, kind: core.Kind) -> list[x509.Certificate]:
    (hook,) = client.get(kind, CONFIG)["webhooks"]
    return pki.parse_bundle(base64.b64decode(hook["clientConfig"].get("caBundle", "")))


def test_rotation_refuses_no_admission_and_the_webhook_reloads_without_restart(
        routed_control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = routed_control_plane
    client = Client(load_config(str(cp.kubeconfig)))
    address, port = host_address(), free_port()
    _service_at(client, address, port)
    ns_selector = {"matchLabels": {"kubernetes.io/metadata.name": NS}}
    validating, mutating = operator_webhook_configs(Endpoint.service(SERVICE, NS), name=CONFIG,
                                                    namespace_selector=ns_selector)
    client.create(core.VALIDATING_WEBHOOK_CONFIGURATION, validating)
    client.create(core.MUTATING_WEBHOOK_CONFIGURATION, mutating)

    mgr = Manager(client, name="webhook-certs", namespaces={NS})
    certs = WebhookCertReconciler(mgr.server_client, NS, SETTINGS, (ServingTarget(SECRET, SERVICE, (
        (core.VALIDATING_WEBHOOK_CONFIGURATION, CONFIG), (core.MUTATING_WEBHOOK_CONFIGURATION, CONFIG))),))
    certs.setup(mgr)
    stop = threading.Event()
    manager_thread = threading.Thread(target=mgr.start, args=(stop,), daemon=True)
    manager_thread.start()
    volume = SecretVolume(client, NS, SECRET, tmp_path / "tls").start()
    webhook: subprocess.Popen[str] | None = None
    writer_stop = threading.Event()
    writes = Writes()
    writer = threading.Thread(target=_write_loop, args=(client, writer_stop, writes), daemon=True)
    try:
        wait_for(lambda: volume.path("tls.key").exists(), EVENTUALLY, "the projected serving certificate")
        first_ca = _secret_cert(client, SETTINGS.ca_secret)
        env = {k: v for k, v in os.environ.items() if k not in ("DEV_MODE", "NAMESPACE", "KUBECONFIG")}
        webhook = subprocess.Popen(
            [sys.executable, "-m", "sriovop.cli", "webhook", "--port", str(port), "--bind-address", address,
             "--tls-cert-file", str(volume.path("tls.crt")), "--tls-private-key-file", str(volume.path("tls.key")),
             "--tls-reload-interval", "0.5", "--kubeconfig", str(cp.kubeconfig), "--namespace", NS],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

        def admitted_through_webhook() -> bool:
            assert webhook is not None and webhook.poll() is None, webhook.communicate()[1][-3000:]
            try:
                client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": "bad", "namespace": NS},
                                                          "spec": {"maxUnavailable": "bogus%"}})
            except ApiError as exc:
                return "denied the request" in str(exc) and "maxUnavailable" in str(exc)
            pytest.fail("an invalid pool config was admitted: the webhook is not in the path")

        wait_for(admitted_through_webhook, EVENTUALLY, "kube-apiserver admitting through the webhook")
        client.create(SRIOV_NETWORK_POOL_CONFIG, {"metadata": {"name": "rotation", "namespace": NS},
                                                  "spec": {"maxUnavailable": 1}})
        writer.start()

        # The CA rotates at 80% of its minute; the new CA is in caBundle (beside the old one) before
        # any server presents a certificate it signed.
        new_ca = wait_for(lambda: (c := _secret_cert(client, SETTINGS.ca_secret)) != first_ca and c,
                          EVENTUALLY, "a CA rotation")
        # The CA Secret is written before the webhook configurations, so caBundle may lag the Secret for
        # a moment; what must hold is that it trusts the new CA by the time a server presents its leaf.
        def bundles_trust_both() -> bool:
            return all(pki.contains(b, new_ca) and pki.contains(b, first_ca)
                       for b in (_bundle(client, core.VALIDATING_WEBHOOK_CONFIGURATION),
                                 _bundle(client, core.MUTATING_WEBHOOK_CONFIGURATION)))

        def served_by_new_ca() -> Any:
            c = served_certificate(address, port)
            if not (c and pki.signed_by(c, new_ca)):
                return None
            assert all(pki.contains(_bundle(client, kind), new_ca) for kind in (
                core.VALIDATING_WEBHOOK_CONFIGURATION, core.MUTATING_WEBHOOK_CONFIGURATION)), \
                "a certificate of the new CA was served before caBundle trusted it"
            return c

        wait_for(bundles_trust_both, EVENTUALLY, "caBundle holding the new CA beside the old one")
        served = wait_for(served_by_new_ca, EVENTUALLY, "the webhook serving a certificate of the new CA")
        assert pki.dns_names(served)[0] == f"{SERVICE}.{NS}.svc"
        # /metrics follows the rotation: the expiry of the certificate served at that moment.
        wait_for(lambda: _expiry_on_metrics(address, port) == served_certificate(address, port)
                 .not_valid_after_utc.timestamp(), EVENTUALLY, "the served certificate's expiry on /metrics")
        # The old CA leaves caBundle once the new certificate has been served for the delivery
        # margin, and writes keep being admitted after that.
        wait_for(lambda: not pki.contains(_bundle(client, core.VALIDATING_WEBHOOK_CONFIGURATION), first_ca),
                 EVENTUALLY, "the old CA dropped from caBundle")
        count = len(writes.results)
        wait_for(lambda: len(writes.results) > count + 10, EVENTUALLY, "more admitted writes")
    finally:
        writer_stop.set()
        if writer.is_alive():
            writer.join(30)
        for kind in (core.VALIDATING_WEBHOOK_CONFIGURATION, core.MUTATING_WEBHOOK_CONFIGURATION):
            with contextlib.suppress(ApiError):
                client.delete(kind, CONFIG)
        stop.set()
        manager_thread.join(30)
        volume.stop()
        stderr = ""
        if webhook is not None:
            alive = webhook.poll() is None
            webhook.send_signal(signal.SIGTERM)
            try:
                _, stderr = webhook.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                webhook.kill()
                _, stderr = webhook.communicate()
            assert alive, f"the webhook process exited during the rotations:\n{stderr[-3000:]}"
    windows = writes.refused_windows()
    longest = max((w for w, _ in windows), default=0.0)
    reloads = stderr.count("serving_cert_reloaded")
    print(json.dumps({"writes": len(writes.results), "refused_writes": sum(1 for r in writes.results if r[2]),
                      "longest_refused_window_s": round(longest, 3), "certificate_versions": volume.versions,
                      "webhook_reloads": reloads}))
    assert len(writes.results) >= 100, "too few writes to say anything"
    assert reloads >= 3, f"the webhook reloaded only {reloads} times (one process, no restart)"
    assert windows == [], f"writes were refused during rotation: {windows[:3]}"
