"""The config daemon process: start-up reads, informers, the reconcile controller, metrics.

```
stop = threading.Event()
Daemon(settings, load_config(None)).run(stop)     # blocks until stop is set
```
Start-up (reference 3.1, without crash-loops): GET the Node (platform from spec.providerID), the
`supported-nic-ids` ConfigMap and SriovOperatorConfig `default`, each retried with backoff. Then three
informers — the node's own NodeState (field selector metadata.name=<node>), the operator config and
this node's device-plugin pods — and one controller with a single worker: a NodeState is never
reconciled twice at once. The periodic pass at rest reads the informers' caches only (reconciler.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE, SRIOV_OPERATOR_CONFIG
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.daemon.deviceplugin import POD_LABELS, DevicePluginPods
from sriovop.daemon.hostref import HostRef
from sriovop.daemon.opconfig import OperatorConfigFollower
from sriovop.daemon.reconciler import NodeStateReconciler
from sriovop.daemon.settings import DaemonSettings, LiveConfig
from sriovop.daemon.startup import wait_for
from sriovop.daemon.status import annotations_of
from sriovop.daemon.systemd_mode import clean_systemd_files
from sriovop.host.kernel_access import KernelAccess, RealKernelAccess
from sriovop.host.steps import StepHook
from sriovop.host.vfmetrics import VfStatsCollector
from sriovop.runtime.cache import InformerFactory, SharedIndexInformer
from sriovop.runtime.client import Client
from sriovop.runtime.config import RestConfig
from sriovop.runtime.controller import Controller, Funcs, Request
from sriovop.runtime.events import EventRecorder
from sriovop.runtime.kinds import CONFIG_MAP, NODE, POD
from sriovop.runtime.serving import HttpServer, metrics_server
from sriovop.runtime.workqueue.ratelimiter import ItemExponentialFailureRateLimiter

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "sriov-config-daemon"
EVENT_COMPONENT = "config-daemon"
#: The informers retry on their own; the controller must never give up waiting for them.
FOREVER = 365 * 24 * 3600.0


def platform_of(node: dict[str, Any]) -> str:
    provider = str((node.get("spec") or {}).get("providerID") or "")
    if "openstack" in provider:
        return "openstack"
    if "aws" in provider:
        return "aws"
    return "baremetal"


def _relevant_update(old: Any, new: Any) -> bool:
    """Upstream's event filter: the generation (spec) or the annotations changed."""
    return bool(old["metadata"].get("generation") != new["metadata"].get("generation")
                or annotations_of(old) != annotations_of(new))


class Daemon:
    def __init__(self, settings: DaemonSettings, config: RestConfig | Client, *, hook: StepHook | None = None,
                 registry: CollectorRegistry | None = None,
                 set_log_level: Callable[[str], None] | None = None, kernel: KernelAccess | None = None) -> None:
        self.settings = settings
        #: How the host's kernel is reached; the process that builds the daemon chooses (default: this machine's).
        self.kernel: KernelAccess = kernel if kernel is not None else RealKernelAccess()
        self.client = config if isinstance(config, Client) else Client(config)
        self.hook = hook
        self.registry = registry if registry is not None else CollectorRegistry()
        self.set_log_level = set_log_level
        self.live = LiveConfig()
        self.reconciler: NodeStateReconciler | None = None
        self.controller: Controller | None = None
        self.metrics: HttpServer | None = None
        self._vf_stats: VfStatsCollector | None = None
        self.started = threading.Event()
        self._log = log.bind(node=settings.node_name)

    def request(self) -> Request:
        return Request(self.settings.namespace, self.settings.node_name)

    def _kick(self) -> None:
        if self.controller is not None:
            self.controller.enqueue(self.request())

    def run(self, stop: threading.Event) -> None:
        s = self.settings
        ns, node_name = s.namespace, s.node_name
        self._log.info("config daemon starting", namespace=ns, host_root=str(s.host_root), dev_mode=s.dev_mode)
        node = wait_for(f"Node {node_name}", lambda: self.client.get(NODE, node_name), stop,
                        max_delay=s.startup_max_delay, hint="the node name must match a Node object "
                                                             "(--node-name / $NODE_NAME)")
        platform = platform_of(node)
        cm = wait_for(f"ConfigMap {ns}/{consts.SUPPORTED_NIC_IDS_CONFIGMAP}",
                      lambda: self.client.get(CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, ns), stop,
                      max_delay=s.startup_max_delay, hint="deployed with the operator manifests")
        nics = SupportedNics.from_configmap(cm, strict=False)
        for problem in nics.errors:
            self._log.warning("skipping a malformed supported-nic-ids entry", error=problem)
        opconfig = wait_for(f"SriovOperatorConfig {ns}/{consts.DEFAULT_CONFIG_NAME}",
                            lambda: self.client.get(SRIOV_OPERATOR_CONFIG, consts.DEFAULT_CONFIG_NAME, ns), stop,
                            max_delay=s.startup_max_delay, hint="created by the operator at its start")
        follower = OperatorConfigFollower(self.live, set_log_level=self.set_log_level, on_change=self._kick)
        follower.apply(opconfig)

        hosts = HostRef(s.host_root, state_dir=s.state_dir, dev_mode=s.dev_mode, supported=nics, platform=platform,
                        kernel=self.kernel)
        if not s.systemd_mode:
            clean_systemd_files(hosts.paths)  # a node switched back from configurationMode systemd
        recorder = EventRecorder(self.client, component=EVENT_COMPONENT, host=node_name)
        factory = InformerFactory(self.client, read_timeout=self.client.config.watch_read_timeout)
        states = factory.informer_for(SRIOV_NETWORK_NODE_STATE, ns, field_selector={"metadata.name": node_name})
        pods = factory.informer_for(POD, ns, label_selector=POD_LABELS, field_selector={"spec.nodeName": node_name})
        device_plugin = DevicePluginPods(self.client, ns, node_name, timeout=s.device_plugin_wait_timeout,
                                         interval=s.device_plugin_poll_interval, stop=stop,
                                         cached=lambda: pods.store.list() if _following(pods) else None)
        self.reconciler = NodeStateReconciler(
            self.client, s, self.live, hosts, recorder=recorder, platform=platform, hook=self.hook,
            device_plugin=device_plugin,
            cached_state=lambda: states.store.get_by_key(f"{ns}/{node_name}") if _following(states) else None)
        configs = factory.informer_for(SRIOV_OPERATOR_CONFIG, ns,
                                       field_selector={"metadata.name": consts.DEFAULT_CONFIG_NAME})
        limiter = ItemExponentialFailureRateLimiter(s.retry_base_delay, s.retry_max_delay)
        self.controller = Controller(CONTROLLER_NAME, self.reconciler.reconcile, workers=1, rate_limiter=limiter,
                                     registry=self.registry, cache_sync_timeout=FOREVER,
                                     need_leader_election=False, shutdown_timeout=60.0)
        self.controller.watches(states, predicates=[Funcs(on_update=_relevant_update, on_delete=lambda o: False)])
        configs.add_event_handler(follower)
        if s.metrics_bind_address:
            self._vf_stats = VfStatsCollector(hosts.paths, node_name, netns=self.kernel.netns)
            self.metrics = metrics_server(s.metrics_bind_address, self._vf_stats, self.registry, "daemon-metrics")
            self.metrics.start()
            self._log.info("metrics endpoint serving", address=s.metrics_bind_address, port=self.metrics.port)
        try:
            factory.start(stop)
            self.started.set()
            self._log.info("config daemon started", platform=platform, supported_nics=len(nics),
                           disable_drain=self.live.disable_drain)
            self.controller.start(stop)
        finally:
            factory.shutdown()
            recorder.stop(5.0)
            if self.metrics is not None:
                self.metrics.stop()
            if self._vf_stats is not None:
                self._vf_stats.close()
            hosts.close()
            self._log.info("config daemon stopped")


def _following(informer: SharedIndexInformer) -> bool:
    """The cache is read only while it follows the server (a watch open, or the next one being opened
    after the server's timeout): during an API server outage and the informer's backoff the passes read
    live, so a change made meanwhile is not missed until the watch is back."""
    return informer.has_synced() and informer.reflector.following
