"""The operator process: two managers, their controllers, one election, and an orderly end.

Shape (upstream's main.go, plus HA):
- the **namespaced** manager caches the operator namespace (and the cluster-scoped Nodes) and hosts the
  policy, operator-config, pool-config and drain controllers, and (self-managed certificate mode)
  the webhook-certificate controller; it serves `/metrics` and the probes;
- the **cluster-wide** manager caches the three network kinds in every namespace, indexed by
  `spec.networkNamespace`, and serves nothing;
- with `--leader-elect`, one Lease gates the controllers of both managers (operator/election.py);
- SIGTERM/SIGINT stop both managers, then the shutdown cleanup runs (operator/shutdown.py) and the
  process exits 0; a failing manager stops the other, the cleanup runs, and the process exits 1.

With an election, the cleanup runs in the leader after its controllers stopped and before it releases
the Lease, and every write of the managers is fenced by the lease (operator/fencing.py): a follower
being rolled, or a leader that lost its lease, never touches what the current leader manages.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

import structlog

from sriovop.api.v1.kinds import NETWORK_KINDS
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.controllers.drain import Drainer, DrainReconciler
from sriovop.controllers.drain.controller import WORKERS as DRAIN_WORKERS
from sriovop.controllers.networks import NetworkReconciler, register_network_namespace_index
from sriovop.controllers.node_policy import DEFAULT_WRITE_WORKERS, NodePolicyReconciler
from sriovop.controllers.operator_config import OperatorConfigReconciler
from sriovop.controllers.policy_status import PolicyStatusReconciler
from sriovop.controllers.pool_config import PoolConfigReconciler
from sriovop.controllers.webhook_certs import CertMode, default_targets
from sriovop.controllers.webhook_certs.isolated import IsolatedCertReconciler
from sriovop.logsetup import set_level
from sriovop.operator.cache_trim import CACHE_TRANSFORMS
from sriovop.operator.election import SharedElection
from sriovop.operator.fencing import FencedClient
from sriovop.operator.metrics import NODE_STATES
from sriovop.operator.settings import OperatorSettings
from sriovop.operator.shutdown import CleanupReport, cleanup
from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.events import EventRecorder
from sriovop.runtime.gcfreeze import freeze_after
from sriovop.runtime.leaderelection import LeaderElectionConfig
from sriovop.runtime.manager import Manager
from sriovop.stopsignals import stop_on_signals

log = structlog.get_logger(__name__)

EVENT_COMPONENT = "sriov-network-operator"


@dataclass
class ElectionOptions:
    enabled: bool = False
    lease_name: str = "a56def2a.openshift.io"
    namespace: str = ""
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


#: Kept-alive connections of the namespaced manager's client: its watches, the drain controller's
#: workers and the policy controller's NodeState writers all use it at once. With the default pool
#: (32) a policy rollout returned more connections than the pool keeps, and each one dropped was a new
#: TLS handshake for the next request (185 of them in a 50-node run of the benchmark).
NAMESPACED_CONNECTIONS = DRAIN_WORKERS + DEFAULT_WRITE_WORKERS + 16


@dataclass
class OperatorOptions:
    metrics_bind_address: str | None = ":8080"
    health_probe_bind_address: str | None = ":8081"
    graceful_shutdown_timeout: float = 30.0
    election: ElectionOptions = field(default_factory=ElectionOptions)
    #: Freeze the objects alive once the caches have synced (sriovop.runtime.gcfreeze); the binary's
    #: default, off for operators run inside a test process.
    freeze_gc: bool = False


class Operator:
    def __init__(self, rest: RestConfig, settings: OperatorSettings, nics: SupportedNics,
                 options: OperatorOptions) -> None:
        self.settings = settings
        self.options = options
        ns = settings.namespace
        self.client = Client(rest)
        self.recorder = EventRecorder(self.client, component=EVENT_COMPONENT)
        self.election: SharedElection | None = None
        self.cleanup_report: CleanupReport | None = None
        if options.election.enabled:
            e = options.election
            self.election = SharedElection(
                self.client, e.namespace or ns, e.lease_name, e.identity,
                LeaderElectionConfig(lease_duration=e.lease_duration, renew_deadline=e.renew_deadline,
                                     retry_period=e.retry_period, name=e.lease_name),
                before_release=self._cleanup_while_leading)
        # One freeze once both managers' caches have synced (sriovop.runtime.gcfreeze), whichever is last.
        synced = freeze_after(2) if options.freeze_gc else None
        self.namespaced = Manager(
            self._writer(replace(rest, max_connections=max(rest.max_connections, NAMESPACED_CONNECTIONS)),
                         "namespaced"), name="namespaced", namespaces={ns},
            metrics_bind_address=options.metrics_bind_address,
            health_probe_bind_address=options.health_probe_bind_address,
            leader_elector=self.election.seam("namespaced") if self.election else None,
            graceful_shutdown_timeout=options.graceful_shutdown_timeout, cache_transforms=CACHE_TRANSFORMS,
            after_caches_synced=synced)
        self.cluster = Manager(
            self._writer(rest, "cluster"), name="cluster", namespaces=None,
            leader_elector=self.election.seam("cluster") if self.election else None,
            graceful_shutdown_timeout=options.graceful_shutdown_timeout, cache_transforms=CACHE_TRANSFORMS,
            after_caches_synced=synced)
        cluster_cache = self.cluster.cache

        def cluster_informers_synced() -> None:
            # The cluster-wide manager serves no probes of its own; readiness covers both managers.
            if not cluster_cache.has_synced():
                raise RuntimeError("cluster-wide informer caches have not synced")

        self.namespaced.add_readyz_check("cluster-informers", cluster_informers_synced)
        if self.election is not None:
            election = self.election

            def lease_healthy() -> None:
                if not election.healthy():
                    raise RuntimeError("leader lease not renewed in time")

            self.namespaced.add_healthz_check("leader-election", lease_healthy)
        self._wire(nics)
        self.stop_event = threading.Event()
        self.errors: list[tuple[str, BaseException]] = []
        self.stopped_by_signal = False

    def _writer(self, rest: RestConfig, who: str) -> Client:
        """The managers' server client; fenced by the lease when there is an election."""
        if self.election is None:
            return Client(rest)
        return FencedClient(rest, self.election.may_write, who, self.election.elector.identity)

    def _wire(self, nics: SupportedNics) -> None:
        s, ns, rec = self.settings, self.settings.namespace, self.recorder
        mgr = self.namespaced
        NODE_STATES.watch(mgr.cache, s.resource_prefix)
        NodePolicyReconciler(mgr.client, mgr.client, ns, nics=nics,
                             stale_delay_minutes=s.stale_node_state_cleanup_delay_minutes, recorder=rec,
                             api_reader=mgr.server_client).setup(mgr)
        certs: IsolatedCertReconciler | None = None
        if s.certs.mode == CertMode.SELF_MANAGED:
            certs = IsolatedCertReconciler(mgr.server_client, ns, s.certs,
                                           default_targets(s.render.operator_webhook_secret, s.render.injector_secret))
            certs.setup(mgr)
        OperatorConfigReconciler(mgr.server_client, mgr.client, ns, s.render, rec, set_log_level=set_level,
                                 certs=s.certs, on_webhooks_applied=certs.trigger if certs else None).setup(mgr)
        PoolConfigReconciler(mgr.client, ns, rec).setup(mgr)
        PolicyStatusReconciler(mgr.client, ns).setup(mgr)
        DrainReconciler(mgr.server_client, ns, Drainer(mgr.server_client, s.resource_prefix), rec).setup(mgr)
        for kind in NETWORK_KINDS:
            register_network_namespace_index(self.cluster, kind)
            NetworkReconciler(kind, self.cluster.client, self.cluster.client, ns, s.resource_prefix,
                              rec, api_reader=self.cluster.server_client).setup(self.cluster)

    # -- running ---------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        def on_signal(_signum: int) -> None:
            self.stopped_by_signal = True

        stop_on_signals("operator", on_stop=on_signal, stop=self.stop_event)

    def _run_manager(self, mgr: Manager) -> None:
        try:
            mgr.start(self.stop_event)
        except BaseException as exc:
            log.error("manager failed", manager=mgr.name, error=repr(exc))
            self.errors.append((mgr.name, exc))
        finally:
            # Whatever ended one manager ends the other.
            self.stop_event.set()

    def run(self) -> int:
        """Run until a signal or a failure; clean up; return the process exit code."""
        threads = [threading.Thread(target=self._run_manager, args=(m,), name=f"manager-{m.name}", daemon=True)
                   for m in (self.namespaced, self.cluster)]
        for t in threads:
            t.start()
        log.info("operator started", namespace=self.settings.namespace,
                 leader_election=self.election is not None)
        self.stop_event.wait()  # set by a stop signal (sriovop.stopsignals) or by a failing manager
        for t in threads:
            t.join(self.options.graceful_shutdown_timeout + 15)
        stuck = [t.name for t in threads if t.is_alive()]
        report = self.cleanup()
        self.recorder.stop(5.0)
        if self.errors:
            for name, exc in self.errors:
                log.error("operator stopped because a manager failed", manager=name, error=str(exc))
            return 1
        if stuck:
            log.error("managers did not stop in time", managers=stuck)
            return 1
        if report is not None and report.errors:
            log.error("shutdown cleanup incomplete", errors=report.errors)
        return 0

    def _cleanup_while_leading(self) -> None:
        # Fenced like the controllers: if the lease cannot be renewed while the cleanup runs, a
        # successor may already be adding the finalizers back, and this replica must stop writing.
        client = self._writer(self.client.config, "cleanup")
        try:
            self.cleanup_report = cleanup(client, self.settings.namespace)
        finally:
            client.close()

    def cleanup(self) -> CleanupReport | None:
        """Without an election: clean up now. With one, the cleanup already ran just before the lease
        was released (only if this replica was leading: a follower or a replica that lost the lease
        must not undo the leader's webhooks)."""
        if self.election is None:
            return cleanup(self.client, self.settings.namespace)
        if self.cleanup_report is None:
            log.info("not leading at shutdown: leaving webhooks and finalizers to the leader")
        return self.cleanup_report


__all__ = ["ElectionOptions", "Operator", "OperatorOptions"]
