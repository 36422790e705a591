"""Service ClusterIP routing for a cluster whose nodes share the host: DNAT rules in per-cluster chains.

Pods reach kube-apiserver, like any in-cluster client, through the `kubernetes` Service's ClusterIP.
kube-proxy would route it, but every kube-proxy on a host writes the same fixed chains (KUBE-SERVICES,
KUBE-SVC-<hash of namespace/name:port>), so two clusters on one machine would overwrite each other's
rules and `down` could not remove one cluster's rules without breaking the other's. This proxy does the
part of kube-proxy's iptables mode that a development cluster needs, in chains named after the
cluster: for every ClusterIP Service port, DNAT to its ready EndpointSlice endpoints (spread with the
`statistic` match, as kube-proxy does), hooked into nat PREROUTING (pods) and OUTPUT (the host) for the
cluster's own Service range only. No NodePorts, no session affinity, no hairpin masquerade (a pod
reaching itself through its own Service).

It watches Services and EndpointSlices (two informers) and, after any change, rewrites the chain
atomically with `iptables-restore --noflush` when the rendered rules differ from the applied ones; every
`resync` seconds it re-applies them anyway, so a chain flushed behind its back comes back.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from sriovop.runtime.cache.informer import SharedIndexInformer
from sriovop.runtime.cache.listener import FuncHandler
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import SERVICE, Kind

ENDPOINT_SLICE = Kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

log = structlog.get_logger("devcluster.serviceproxy")


def chain_name(tag: str) -> str:
    return f"{tag.upper()}-SVC"


def _hooks(tag: str, service_range: str) -> list[list[str]]:
    rule = ["-d", service_range, "-m", "comment", "--comment", f"{tag} services", "-j", chain_name(tag)]
    return [["PREROUTING", *rule], ["OUTPUT", *rule]]


def render_rules(services: Sequence[Mapping[str, Any]], slices: Sequence[Mapping[str, Any]]) -> list[str]:
    """iptables rule specs (without `-A CHAIN`) for every ClusterIP port that has ready endpoints."""
    by_service: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for eps in slices:
        meta = eps.get("metadata") or {}
        svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if svc and eps.get("addressType") == "IPv4":
            by_service.setdefault((meta.get("namespace", ""), svc), []).append(eps)
    rules: list[str] = []
    for svc in sorted(services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])):
        spec = svc.get("spec") or {}
        cluster_ip = spec.get("clusterIP")
        if not cluster_ip or cluster_ip == "None":
            continue
        key = (svc["metadata"]["namespace"], svc["metadata"]["name"])
        for port in spec.get("ports") or []:
            protocol = str(port.get("protocol", "TCP")).lower()
            targets = sorted(_targets(by_service.get(key, []), port.get("name") or ""))
            comment = f"{key[0]}/{key[1]}:{port.get('name') or port['port']}"
            match = (f"-d {cluster_ip}/32 -p {protocol} -m {protocol} --dport {port['port']}"
                     f" -m comment --comment {comment}")
            for i, target in enumerate(targets):
                left = len(targets) - i
                spread = f" -m statistic --mode random --probability {1 / left:.10f}" if left > 1 else ""
                rules.append(f"{match}{spread} -j DNAT --to-destination {target}")
    return rules


def _targets(slices: list[Mapping[str, Any]], port_name: str) -> set[str]:
    out: set[str] = set()
    for eps in slices:
        port = next((p for p in eps.get("ports") or [] if (p.get("name") or "") == port_name), None)
        if port is None or port.get("port") is None:
            continue
        for endpoint in eps.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            for address in endpoint.get("addresses") or []:
                out.add(f"{address}:{port['port']}")
    return out


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", "5", *args], capture_output=True, text=True, check=check)


def _restore(chain: str, rules: list[str]) -> None:
    payload = "\n".join(["*nat", f":{chain} - [0:0]", *(f"-A {chain} {r}" for r in rules), "COMMIT", ""])
    subprocess.run(["iptables-restore", "-w", "5", "--noflush"], input=payload, text=True,
                   capture_output=True, check=True)


def install(tag: str, service_range: str) -> None:
    """Create the (empty) chain and hook it in, once; idempotent."""
    _restore(chain_name(tag), [])
    for hook in _hooks(tag, service_range):
        if _iptables("-t", "nat", "-C", *hook, check=False).returncode != 0:
            _iptables("-t", "nat", "-I", *hook)


def uninstall(tag: str, service_range: str) -> None:
    """Remove the hooks and the chain; idempotent (a cluster killed without `down` is cleaned the same way)."""
    for hook in _hooks(tag, service_range):
        while _iptables("-t", "nat", "-D", *hook, check=False).returncode == 0:
            pass
    chain = chain_name(tag)
    _iptables("-t", "nat", "-F", chain, check=False)
    _iptables("-t", "nat", "-X", chain, check=False)


def chains_left(tag: str) -> list[str]:
    """Lines of `iptables-save` that still mention this cluster (empty after `uninstall`)."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    chain = chain_name(tag)
    return [line for line in out.splitlines() if chain in line.replace(":", " ").split()]


class ServiceProxy:
    def __init__(self, client: Client, tag: str, service_range: str, resync: float = 30.0) -> None:
        self._tag = tag
        self._range = service_range
        self._resync = resync
        self._stop = threading.Event()
        self._changed = threading.Event()
        self._informers = [SharedIndexInformer(client, kind) for kind in (SERVICE, ENDPOINT_SLICE)]
        self._thread: threading.Thread | None = None
        self._applied: list[str] | None = None

    def start(self, timeout: float = 60.0) -> None:
        install(self._tag, self._range)
        handler = FuncHandler(add=lambda *_: self._changed.set(), update=lambda *_: self._changed.set(),
                              delete=lambda *_: self._changed.set())
        for informer in self._informers:
            informer.add_event_handler(handler)
            informer.start(self._stop)
        for informer in self._informers:
            if not informer.wait_for_cache_sync(timeout=timeout, stop=self._stop):
                raise TimeoutError(f"the Service proxy's {informer.name} informer did not sync in {timeout:.0f}s")
        self.sync()
        self._thread = threading.Thread(target=self._run, name="service-proxy", daemon=True)
        self._thread.start()

    def sync(self) -> None:
        services, slices = (informer.store.list() for informer in self._informers)
        rules = render_rules(services, slices)
        if rules != self._applied:
            _restore(chain_name(self._tag), rules)
            self._applied = rules
            log.info("service rules applied", rules=len(rules))

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._changed.wait(self._resync):
                self._applied = None  # periodic resync: re-apply even if nothing changed
            self._changed.clear()
            if self._stop.is_set():
                return
            try:
                self.sync()
            except (OSError, subprocess.CalledProcessError) as exc:
                log.warning("service proxy sync failed; retrying", error=str(exc))
                self._applied = None
                self._stop.wait(1.0)
                self._changed.set()

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for informer in self._informers:
            informer.stop()
        uninstall(self._tag, self._range)
