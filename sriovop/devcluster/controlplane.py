"""Start and stop etcd + kube-apiserver on loopback, the way envtest does.

Everything lives in one directory (certificates, data, logs, kubeconfigs, state.json) so that a
control plane started by `sriovop dev cluster up` can be found and stopped by `down` later.
"""

from __future__ import annotations

import atexit
import base64
import json
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import structlog
import yaml

from sriovop.devcluster import process
from sriovop.devcluster.addressing import ClusterNetwork
from sriovop.devcluster.binaries import ControlPlaneBinaries, find_binaries
from sriovop.devcluster.certs import CertificateAuthority, KeyPair, service_account_keys
from sriovop.devcluster.deadlines import scaled

log = structlog.get_logger("devcluster")

READY_TIMEOUT_S = 60.0
#: The user of the admin kubeconfig (group system:masters).
ADMIN_USER = "sriovop-admin"


class ControlPlaneError(RuntimeError):
    pass


class ControlPlane:
    """One etcd and one kube-apiserver with RBAC, certificates and an admin kubeconfig."""

    def __init__(
        self,
        directory: Path | None = None,
        binaries: ControlPlaneBinaries | None = None,
        extra_apiserver_args: list[str] | None = None,
        network: ClusterNetwork | None = None,
    ) -> None:
        """With `network`, kube-apiserver serves a cluster with nodes (see _node_args)."""
        self._owns_dir = directory is None
        self.network = network
        self.dir = Path(directory or tempfile.mkdtemp(prefix="sriovop-cp-"))
        self._binaries = binaries
        self._extra = list(extra_apiserver_args or [])
        self._ca: CertificateAuthority | None = None
        self.etcd: subprocess.Popen[bytes] | None = None
        self.apiserver: subprocess.Popen[bytes] | None = None
        self.etcd_port = 0
        self.apiserver_port = 0
        self._atexit_registered = False

    # ---- paths and addresses -------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    @property
    def ca_pem(self) -> bytes:
        return self.ca_file.read_bytes()

    @property
    def apiserver_log(self) -> Path:
        return self.dir / "kube-apiserver.log"

    @property
    def etcd_log(self) -> Path:
        return self.dir / "etcd.log"

    # ---- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ControlPlane:
        started = time.monotonic()
        binaries = self._binaries or find_binaries()
        self._binaries = binaries
        pki = self.dir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        self._ca = CertificateAuthority()
        self._ca.as_pair().write(pki, "ca")
        hosts = ["127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default",
                 "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]
        if self.network is not None:
            hosts += [self.network.host_ip, self.network.kubernetes_service_ip]
            self._ca.issue_client("kube-apiserver-kubelet-client", ["system:masters"]).write(pki, "kubelet-client")
        self._ca.issue_server(hosts).write(pki, "apiserver")
        service_account_keys().write(pki, "sa")
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        self._start_etcd(binaries)
        self.apiserver_port = process.free_port()
        self._start_apiserver(binaries)
        self.write_kubeconfig(self.kubeconfig, self._ca.issue_client(ADMIN_USER, ["system:masters"]))
        self._write_state()
        log.info("control plane ready", url=self.url, seconds=round(time.monotonic() - started, 2))
        return self

    def _start_etcd(self, binaries: ControlPlaneBinaries) -> None:
        data = self.dir / "etcd-data"
        data.mkdir(exist_ok=True)
        self.etcd_port, peer = process.free_port(), process.free_port()
        peer_url = f"http://127.0.0.1:{peer}"
        self.etcd = process.spawn(
            [str(binaries.etcd), "--name=default", f"--data-dir={data}",
             f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
             f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
             f"--initial-cluster=default={peer_url}", "--unsafe-no-fsync=true",
             "--log-level=warn", "--quota-backend-bytes=4294967296"],
            self.etcd_log,
        )
        self._wait(lambda: self._http_ok(f"{self.etcd_url}/health"), self.etcd, self.etcd_log, "etcd")

    def _apiserver_args(self, binaries: ControlPlaneBinaries) -> list[str]:
        pki = self.dir / "pki"
        return [
            str(binaries.kube_apiserver),
            f"--etcd-servers={self.etcd_url}",
            f"--secure-port={self.apiserver_port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--allow-privileged=true",
            f"--service-account-issuer=https://127.0.0.1:{self.apiserver_port}/",
            f"--service-account-key-file={pki / 'sa.crt'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--profiling=false",
            "--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
            *(self._node_args() if self.network is not None else self._loopback_args()),
            *self._extra,
        ]

    @staticmethod
    def _loopback_args() -> list[str]:
        """No kubelets or controllers: no ServiceAccount admission (no controller makes the `default`
        accounts), no endpoints for the `kubernetes` Service."""
        return [
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--disable-admission-plugins=ServiceAccount",
            "--endpoint-reconciler-type=none",
        ]

    def _node_args(self) -> list[str]:
        """What changes when kubelets, controllers and pods use this apiserver.

        Pods reach it through the `kubernetes` Service, so it listens beyond loopback and advertises the
        host address (the lease endpoint reconciler keeps that Service's endpoints); pods get
        ServiceAccount tokens; kubelets are authorized as nodes; webhook and aggregated-API Services are
        called at their endpoint (pod) IPs, which the host routes to directly.
        """
        assert self.network is not None
        pki = self.dir / "pki"
        return [
            "--bind-address=0.0.0.0", f"--advertise-address={self.network.host_ip}",
            f"--service-cluster-ip-range={self.network.service_range}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--endpoint-reconciler-type=lease",
            "--enable-aggregator-routing=true",
            f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'kubelet-client.key'}",
            "--kubelet-preferred-address-types=InternalIP",
        ]

    def _start_apiserver(self, binaries: ControlPlaneBinaries) -> None:
        self.apiserver = process.spawn(self._apiserver_args(binaries), self.apiserver_log)
        self._wait(self._readyz, self.apiserver, self.apiserver_log, "kube-apiserver")

    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Stop kube-apiserver and start it again on the same port against the same etcd.

        Call it from the thread that called start() (in practice the main thread): the new process gets
        PR_SET_PDEATHSIG too, so it would die with a short-lived helper thread that started it.
        """
        assert self._binaries is not None, "start() first"
        process.terminate(self.apiserver)
        time.sleep(downtime)
        self._start_apiserver(self._binaries)
        self._write_state()

    def stop(self) -> None:
        process.terminate(self.apiserver)
        process.terminate(self.etcd)
        self.apiserver = self.etcd = None
        if self._owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- identities ----------------------------------------------------------------------------
    def mint_user(self, user: str, groups: list[str] | None = None) -> Path:
        """A kubeconfig for a client-certificate identity, for RBAC tests and least-privilege runs."""
        assert self._ca is not None, "start() first"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        path = self.dir / "users" / f"{safe}.kubeconfig"
        path.parent.mkdir(exist_ok=True)
        self.write_kubeconfig(path, self._ca.issue_client(user, groups))
        return path

    def issue_serving_cert(self, hosts: list[str]) -> KeyPair:
        """A serving certificate signed by the cluster CA (for webhooks the apiserver calls)."""
        assert self._ca is not None, "start() first"
        return self._ca.issue_server(hosts)

    def write_kubeconfig(self, path: Path, client: KeyPair) -> None:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "sriovop-dev",
            "clusters": [{"name": "sriovop-dev", "cluster": {
                "server": self.url, "certificate-authority-data": b64(self.ca_pem)}}],
            "users": [{"name": "user", "user": {
                "client-certificate-data": b64(client.cert_pem), "client-key-data": b64(client.key_pem)}}],
            "contexts": [{"name": "sriovop-dev", "context": {"cluster": "sriovop-dev", "user": "user"}}],
        }
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)

    # ---- readiness -----------------------------------------------------------------------------
    def _admin_ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        admin = self.dir / "pki" / "probe"
        if not (admin.with_suffix(".crt")).exists():
            assert self._ca is not None
            self._ca.issue_client("sriovop-probe", ["system:masters"]).write(self.dir / "pki", "probe")
        ctx.load_cert_chain(str(admin.with_suffix(".crt")), str(admin.with_suffix(".key")))
        return ctx

    def _readyz(self) -> bool:
        return self._http_ok(f"{self.url}/readyz", self._admin_ssl())

    @staticmethod
    def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
            return False

    @staticmethod
    def _wait(check: Any, proc: subprocess.Popen[bytes] | None, log_path: Path, what: str) -> None:
        limit = scaled(READY_TIMEOUT_S)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise ControlPlaneError(
                    f"{what} exited with code {proc.returncode} before becoming ready; "
                    f"last lines of {log_path}:\n{process.log_tail(log_path)}"
                )
            if check():
                return
            time.sleep(0.1)
        raise ControlPlaneError(
            f"{what} was not ready within {limit:.0f}s; last lines of {log_path}:\n"
            f"{process.log_tail(log_path)}"
        )

    def _write_state(self) -> None:
        state = {
            "url": self.url, "kubeconfig": str(self.kubeconfig), "etcd_url": self.etcd_url,
            "pids": {"etcd": self.etcd.pid if self.etcd else None,
                     "kube-apiserver": self.apiserver.pid if self.apiserver else None},
        }
        (self.dir / "state.json").write_text(json.dumps(state, indent=2))
