"""Validating-endpoint latency of the admission webhook; prints one JSON document.

The judged request is the expensive kind: a policy whose nodeSelector matches all 50 nodes, checked
against each node's NodeState and against 50 stored policies that also select every node (2,500 peer
checks). 2,000 requests (after a warm-up) come from 8 concurrent client threads on kept-alive HTTPS
connections; the server runs in its own process, as in production.

Modes (each a fresh server process):
- memory:   the view holds the 50 nodes / states / policies in memory (the cache's read cost, no API);
- informer: `sriovop webhook --cache` semantics: informers on a private real control plane;
- live:     the default view: each request lists nodes, states and policies from the API server.
Floor, measured in the same run and with the same clients: GET /readyz on the memory server (TLS +
HTTP + threading, no judging). Target: memory and informer p99 <= 20 ms.

Usage: .venv/bin/python test/bench/webhook_latency.py [--requests 2000] [--clients 8] [--no-control-plane]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import structlog  # noqa: E402

from sriovop.devcluster.certs import CertificateAuthority  # noqa: E402
from sriovop.webhook.cluster_view import StaticClusterView  # noqa: E402
from sriovop.webhook.handler import VALIDATING_PATH, AdmissionHandler  # noqa: E402
from sriovop.webhook.server import WebhookServer, server_ssl_context  # noqa: E402
from sriovop.webhook.settings import WebhookSettings  # noqa: E402
from test.support.webhook_objects import (  # noqa: E402
    NICS,
    OPERATOR_NS,
    SUPPORTED_NIC_DATA,
    intel_xxv710,
    node,
    node_state,
    policy,
    review,
)

NODES = 50
POLICIES = 50


def cluster_objects(ns: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [node(f"bench-worker-{i}", {"node-role.kubernetes.io/worker": "", "bench": "yes"}) for i in range(NODES)]
    states = [node_state(n["metadata"]["name"], [intel_xxv710(), intel_xxv710("ens1f1", "0000:3b:00.1")],
                         namespace=ns) for n in nodes]
    policies = [policy(f"peer-{i}", ns, resourceName=f"res{i}", numVfs=64, nodeSelector={"bench": "yes"},
                       nicSelector={"pfNames": [f"ens1f0#{i}-{i}"]}) for i in range(POLICIES)]
    return nodes, states, policies


def judged_body(ns: str) -> bytes:
    p = policy("candidate", ns, resourceName="candidate", numVfs=64, nodeSelector={"bench": "yes"},
               nicSelector={"pfNames": ["ens1f1#60-63"]})
    return json.dumps(review("SriovNetworkNodePolicy", p)).encode()


def _serve(mode: str, ns: str, kubeconfig: str | None, cert: str, key: str, port_q: Any) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    settings = WebhookSettings(namespace=ns)
    if mode == "memory":
        nodes, states, policies = cluster_objects(ns)
        view: Any = StaticClusterView(nodes, states, policies, nics=NICS)
    else:
        from sriovop.runtime.client import Client
        from sriovop.runtime.config import load_config
        from sriovop.webhook.cluster_view import ClientClusterView
        from sriovop.webhook.informer_view import InformerClusterView

        client = Client(load_config(kubeconfig))
        if mode == "informer":
            view = InformerClusterView(client, ns)
            view.start()
        else:
            view = ClientClusterView(client, ns)
    server = WebhookServer(("127.0.0.1", 0), AdmissionHandler(view, settings), server_ssl_context(cert, key))
    port_q.put(server.port)
    server.serve_forever()


def drive(port: int, ca_pem: bytes, method: str, path: str, body: bytes | None, total: int, clients: int,
          expect_allowed: bool | None) -> list[float]:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    latencies: list[float] = []
    lock = threading.Lock()
    per_client = total // clients
    errors: list[str] = []

    def worker() -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
        mine = []
        for _ in range(per_client):
            start = time.perf_counter()
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            mine.append(time.perf_counter() - start)
            if response.status != 200:
                errors.append(f"HTTP {response.status}")
            elif expect_allowed is not None and json.loads(data)["response"]["allowed"] is not expect_allowed:
                errors.append(data.decode()[:300])
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"{len(errors)} bad answers, first: {errors[0]}")
    return latencies


def summary(latencies: list[float], wall: float) -> dict[str, float]:
    ordered = sorted(latencies)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return {"requests": len(ordered), "p50_ms": round(pick(0.50), 3), "p90_ms": round(pick(0.90), 3),
            "p99_ms": round(pick(0.99), 3), "max_ms": round(ordered[-1] * 1000, 3),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 3), "throughput_rps": round(len(ordered) / wall, 1)}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc), to report CPU per request independent of machine load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(mode: str, ns: str, kubeconfig: str | None, cert: str, key: str, ca_pem: bytes, args: Any,
            floor: bool = False) -> dict[str, Any]:
    mp = multiprocessing.get_context("fork")
    port_q = mp.Queue()
    proc = mp.Process(target=_serve, args=(mode, ns, kubeconfig, cert, key, port_q), daemon=True)
    proc.start()
    try:
        port = port_q.get(timeout=120)
        body = judged_body(ns)
        drive(port, ca_pem, "POST", VALIDATING_PATH, body, 200, args.clients, True)  # warm-up
        cpu0, start = cpu_seconds(proc.pid or 0), time.perf_counter()
        lat = drive(port, ca_pem, "POST", VALIDATING_PATH, body, args.requests, args.clients, True)
        result = {"validating": summary(lat, time.perf_counter() - start)}
        result["validating"]["server_cpu_ms_per_request"] = round(
            (cpu_seconds(proc.pid or 0) - cpu0) * 1000 / len(lat), 3)
        if floor:
            cpu0, start = cpu_seconds(proc.pid or 0), time.perf_counter()
            lat = drive(port, ca_pem, "GET", "/readyz", None, args.requests, args.clients, None)
            result["floor_readyz"] = summary(lat, time.perf_counter() - start)
            result["floor_readyz"]["server_cpu_ms_per_request"] = round(
                (cpu_seconds(proc.pid or 0) - cpu0) * 1000 / len(lat), 3)
        return result
    finally:
        proc.terminate()
        proc.join(10)


def handler_only(total: int) -> dict[str, float]:
    """The judging itself, in this process, one request at a time: no TLS, HTTP or queueing."""
    nodes, states, policies = cluster_objects(OPERATOR_NS)
    handler = AdmissionHandler(StaticClusterView(nodes, states, policies, nics=NICS),
                               WebhookSettings(namespace=OPERATOR_NS))
    body = judged_body(OPERATOR_NS)
    latencies = []
    start = time.perf_counter()
    for _ in range(total):
        t = time.perf_counter()
        status, answer = handler.handle(VALIDATING_PATH, body)
        latencies.append(time.perf_counter() - t)
        assert status == 200 and answer["response"]["allowed"] is True
    return summary(latencies, time.perf_counter() - start)


def seed_control_plane(kubeconfig: str, ns: str) -> None:
    from sriovop.api.v1 import kinds
    from sriovop.runtime import kinds as core
    from sriovop.runtime.client import Client
    from sriovop.runtime.config import load_config
    from test.support.kube import apply_crds

    apply_crds(Path(kubeconfig), sorted((REPO / "manifests" / "crds").glob("*.yaml")))
    client = Client(load_config(kubeconfig))
    client.create(core.NAMESPACE, {"metadata": {"name": ns}})
    client.create(core.CONFIG_MAP, {"metadata": {"name": "supported-nic-ids", "namespace": ns},
                                    "data": SUPPORTED_NIC_DATA})
    nodes, states, policies = cluster_objects(ns)
    for n in nodes:
        client.create(core.NODE, n)
    for s in states:
        status = s.pop("status")
        created = client.create(kinds.SRIOV_NETWORK_NODE_STATE, s)
        created["status"] = status
        client.update_status(kinds.SRIOV_NETWORK_NODE_STATE, created)
    for p in policies:
        client.create(kinds.SRIOV_NETWORK_NODE_POLICY, p)
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--no-control-plane", action="store_true", help="only the in-memory mode and the floor")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    load_at_start = round(os.getloadavg()[0], 2)
    ca = CertificateAuthority("bench-ca")
    serving = ca.issue_server(["127.0.0.1"])
    out: dict[str, Any] = {"benchmark": "webhook_latency", "nodes": NODES, "policies": POLICIES,
                           "requests": args.requests, "clients": args.clients, "target_p99_ms": 20.0}
    out["handler_only"] = handler_only(args.requests)
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = (str(p) for p in serving.write(Path(tmp), "serving"))
        memory = measure("memory", OPERATOR_NS, None, cert, key, ca.cert_pem, args, floor=True)
        out["memory"] = memory["validating"]
        out["floor_readyz"] = memory["floor_readyz"]
        if not args.no_control_plane:
            from sriovop.devcluster import ControlPlane

            with ControlPlane() as cp:
                kubeconfig = str(cp.kubeconfig)
                seed_control_plane(kubeconfig, OPERATOR_NS)
                out["informer"] = measure("informer", OPERATOR_NS, kubeconfig, cert, key, ca.cert_pem, args)[
                    "validating"]
                out["live"] = measure("live", OPERATOR_NS, kubeconfig, cert, key, ca.cert_pem, args)["validating"]
    out["load_average_1m_at_start"] = load_at_start
    out["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
    out["cpus"] = os.cpu_count()
    floor_p50 = out["floor_readyz"]["p50_ms"]
    for mode in ("memory", "informer", "live"):
        if mode in out:
            out[mode]["p50_vs_floor"] = round(out[mode]["p50_ms"] / floor_p50, 2) if floor_p50 else None
            out[mode]["meets_target"] = out[mode]["p99_ms"] <= out["target_p99_ms"]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
