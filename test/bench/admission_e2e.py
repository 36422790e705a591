"""Admission end to end through kube-apiserver: dry-run policy creates with our webhook vs without it.

What it measures: at N nodes (NodeStates with 2-8 PFs, mixed vendors) and P stored policies with
distinct selectors and VF ranges (test/bench/clustergen.py), 8 client threads send dry-run creates of
policies the webhook admits (the expensive outcome: every peer and range check runs) to a real
kube-apiserver. Side A: no webhook registered (the API server alone: authn, validation, defaulting,
dry-run storage). Side B: `sriovop webhook` in its default configuration (informer caches plus the
read-your-writes barrier), registered as the operator registers it (mutating + validating, failurePolicy
Fail). Side F, the floor: test/bench/admission_floor.py, our HTTPS server registered the same way but
allowing every review without judging it (two webhook calls over TLS, review decoding: what no rule
can avoid). Side FB: the same floor server waiting for the webhook's read-your-writes barrier before it
allows (the floor of any cache-backed webhook that is correct right after a write). Rounds alternate
A, F, FB, B, A, F, FB, B... on the same API server with the same requests, all warmed; each round's
p50/p99 over its requests, then the median (min/max) of the rounds. Added p99 = median B p99 - median
A p99 (and F - A, FB - A for the floors). Why this baseline: it is exactly what a user's
create costs without the operator's webhook, measured on the same server, data and machine load.
Targets (issue 24): added p99 <= 1.25x what FB adds in the same run, and the webhook process's own CPU
per admission <= 2.5 ms (`webhook_cpu_ms_per_admission_<N>_nodes`, against FB's server;
issue 15's 20 ms for the added p99 is below what FB adds by itself). Where the time goes, from the
same run: the webhook's own mean time per review and per freshness-barrier wait (its /metrics), and
the barrier alone (`barrier_alone`: the read-your-writes cost on this API server, nothing judged), and
the barrier's two kinds of read alone per kind (`reads_alone`: latency and what kube-apiserver and
etcd charge for a consistent read and for a read at a known resourceVersion), and the CPU each
create costs by process and side (8 clients saturate two cores, so latency follows CPU per create),
and the full garbage collections of the webhook and of the barrier floor during the rounds (each
stops its server; both freeze their synced caches out of them, sriovop.runtime.gcfreeze, and so does
this driver before its rounds: a pause of its own would stop every client in whichever round it lands).

    .venv/bin/python test/bench/admission_e2e.py [--nodes 500,2000,5000] [--policies 200] [--rounds 5] [--quick]
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import benchlib
import clustergen
import seed
from benchlib import Figure, Stat, percentile

from sriovop.api.v1 import kinds
from sriovop.devcluster.process import free_port
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.gcfreeze import freeze_now

NS = clustergen.NS
CONFIG = "bench-sriov-operator-webhook"
#: Issue 24's targets: the added p99 within 1.25x of what the barrier floor adds in the same run, and the
#: webhook process's own CPU per admission.
ADDED_OVER_BARRIER_FLOOR = 1.25
WEBHOOK_CPU_TARGET_MS = 2.5


def drive(clients: list[Client], bodies: list[dict[str, Any]], total: int) -> list[float]:
    """`total` dry-run creates spread over the client threads; every one must be admitted."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    per = total // len(clients)

    def worker(w: int) -> None:
        mine = []
        for i in range(per):
            body = bodies[(w * per + i) % len(bodies)]
            start = time.perf_counter()
            try:
                clients[w].create(kinds.SRIOV_NETWORK_NODE_POLICY, body, dry_run=True)
            except ApiError as exc:
                errors.append(str(exc)[:300])
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"{len(errors)} creates refused; first: {errors[0]}")
    return latencies


#: The server commands (after the interpreter): ours in its default configuration, and the floor.
WEBHOOK = ["-m", "sriovop.cli", "webhook", "--log-level", "warning"]
FLOOR = [str(Path(__file__).with_name("admission_floor.py"))]


class Webhook:
    """An admission server as a process (`command`: WEBHOOK or FLOOR), registered as the operator
    registers its webhook (mutating + validating, failurePolicy Fail) under the configuration `name`."""

    def __init__(self, cp: Any, client: Client, tmp: Path, command: list[str] = WEBHOOK, name: str = CONFIG) -> None:
        from sriovop.render.webhook_configs import Endpoint, operator_webhook_configs

        self.client = client
        cert, key = cp.issue_serving_cert(["127.0.0.1"]).write(tmp, name)
        port = free_port()
        env = {**os.environ, "KUBECONFIG": str(cp.kubeconfig), "NAMESPACE": NS, "PYTHONPATH": str(benchlib.REPO)}
        self.log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, *command, "--port", str(port), "--bind-address", "127.0.0.1",
             "--tls-cert-file", str(cert), "--tls-private-key-file", str(key)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=benchlib.REPO)
        endpoint = Endpoint.url(f"https://127.0.0.1:{port}", cp.ca_pem)
        self.configs = operator_webhook_configs(endpoint, name=name)
        self.registered = False
        self.port, self.ca_pem = port, cp.ca_pem

    def samples(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """One scrape of the server's /metrics, parsed by prometheus-client's own parser: each sample's
        value by its name and labels (histograms' `_sum`, `_count` and `_bucket` series included)."""
        import ssl
        import urllib.request

        from prometheus_client.parser import text_string_to_metric_families

        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/metrics", context=ctx, timeout=30) as resp:
            text = resp.read().decode()
        return {(s.name, frozenset(s.labels.items())): float(s.value)
                for family in text_string_to_metric_families(text) for s in family.samples}

    def freshness_rounds(self) -> float:
        """How many rounds of consistent reads the server's freshness barrier has made."""
        value = self.samples().get(("sriovop_webhook_freshness_rounds_total", frozenset()))
        if value is None:
            raise SystemExit("the webhook exports no sriovop_webhook_freshness_rounds_total")
        return value

    def full_collections(self) -> dict[str, float]:
        """The server's full garbage collections so far (its `sriovop_gc_pause_seconds`, generation 2):
        how many, their seconds, and how many stopped it for 50 ms or more."""
        samples = self.samples()
        full = frozenset({("generation", "2")})
        return {"count": samples.get(("sriovop_gc_pause_seconds_count", full), 0.0),
                "seconds": samples.get(("sriovop_gc_pause_seconds_sum", full), 0.0),
                "under_50ms": samples.get(("sriovop_gc_pause_seconds_bucket", full | {("le", "0.05")}), 0.0)}

    def mean_seconds(self) -> dict[str, float]:
        """Mean time per observation of each duration histogram the server exports (its /metrics):
        how long judging a review took inside the server, and how much of it the freshness barrier.
        Keyed `name` or `name{label="value",...}`, as the exposition writes a series."""
        samples = self.samples()
        means: dict[str, float] = {}
        for (name, labels), total in samples.items():
            if not (name.startswith("sriovop_webhook_") and name.endswith("_sum")):
                continue
            count = samples.get((name[: -len("_sum")] + "_count", labels))
            if count:
                rendered = ",".join(f'{k}="{v}"' for k, v in sorted(labels))
                key = name[: -len("_sum")] + (f"{{{rendered}}}" if rendered else "")
                means[key] = round(total / count, 6)
        return means

    def pid(self) -> int:
        return self.proc.pid

    def register(self, on: bool, probe: dict[str, Any]) -> None:
        """Create or delete the configurations and wait until the API server applies the change."""
        pairs = zip((core.VALIDATING_WEBHOOK_CONFIGURATION, core.MUTATING_WEBHOOK_CONFIGURATION),
                    self.configs, strict=True)
        for kind, obj in pairs:
            if on:
                self.client.create(kind, obj)
            else:
                with contextlib.suppress(NotFound):
                    self.client.delete(kind, obj["metadata"]["name"])
        deadline = time.monotonic() + 120
        while True:  # the probe is a policy only the webhook refuses (numVfs 0)
            try:
                self.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, probe, dry_run=True)
                active = False
            except ApiError as exc:
                active = "denied the request" in str(exc)
                if not active and on and self.proc.poll() is not None:
                    raise SystemExit(f"the webhook exited: {Path(self.log.name).read_text()[-2000:]}") from None
            if active == on:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"webhook registration {'on' if on else 'off'} not effective after 120 s")
            time.sleep(0.2)
        self.registered = on

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def barrier_alone(client: Client, clients_n: int, waits: int = 40) -> dict[str, float]:
    """The freshness barrier by itself (the webhook's informer view in this process, nothing else
    judged): `clients_n` threads each waiting `waits` times, as concurrent judgements would. What
    read-your-writes costs on this API server: per round one consistent read per cached kind plus
    the settle time."""
    from sriovop.webhook.informer_view import InformerClusterView

    view = InformerClusterView(client, NS)
    view.start()
    latencies: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = []
        for _ in range(waits):
            start = time.perf_counter()
            view.fresh()
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    try:
        rounds_before = view.barrier.rounds
        threads = [threading.Thread(target=worker) for _ in range(clients_n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rounds = view.barrier.rounds - rounds_before
    finally:
        view.stop()
    return {"p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 2), "waits": len(latencies), "rounds": rounds}


def reads_alone(client: Client, server_pids: dict[str, int], reads: int = 40,
                rounds: int = 5) -> dict[str, dict[str, float]]:
    """What kube-apiserver (and etcd) charge for one read of the freshness barrier, by itself: per
    cached kind, the consistent `limit=1` LIST the barrier sends for its anchor, and the same LIST at a
    resourceVersion read just before (`resourceVersionMatch=NotOlderThan`, what it sends for the other
    kinds), interleaved in `rounds` rounds of `reads` reads each, one thread, nothing else in flight.
    p50 latency over every read; server CPU (kube-apiserver + etcd, clock ticks: 0.25 ms resolution at
    40 reads) per read, median of the rounds. The consistent read first asks etcd for its current
    revision (a one-item LIST over the kind's key range); the other is answered from the watch cache
    alone. No resourceVersion "0" read beside them: the watch cache ignores `limit` there and returns
    every item, which is other work, not a cheaper way to the answer."""
    from sriovop.webhook.freshness import KindRead
    from sriovop.webhook.informer_view import kind_read

    anchor_rv = client.list_page(kinds.SRIOV_NETWORK_NODE_POLICY, NS, limit=1).resource_version
    out: dict[str, dict[str, float]] = {}
    for name, kind, namespace in (("nodes", core.NODE, None), ("nodestates", kinds.SRIOV_NETWORK_NODE_STATE, NS),
                                  ("policies", kinds.SRIOV_NETWORK_NODE_POLICY, NS)):
        took: dict[str, list[float]] = {"consistent": [], "not_older_than": []}

        def side(how: str, read: KindRead = kind_read(client, kind, namespace),
                 took: dict[str, list[float]] = took) -> float:
            at = None if how == "consistent" else anchor_rv
            before = sum(benchlib.cpu_seconds(pid) for pid in server_pids.values())
            for _ in range(reads):
                start = time.perf_counter()
                read(at)  # exactly the barrier's read
                took[how].append(time.perf_counter() - start)
            return (sum(benchlib.cpu_seconds(pid) for pid in server_pids.values()) - before) / reads

        cpu = benchlib.interleave({how: partial(side, how) for how in took}, rounds)
        for how, samples in took.items():
            out[f"{name}_{how}"] = {"p50_ms": round(percentile(samples, 0.5) * 1000, 2),
                                    "server_cpu_ms": round(Stat.of(cpu[how]).median * 1000, 3)}
    return out


def measure(nodes: int, policies: int, rounds: int, requests: int, clients_n: int) -> dict[str, Any]:
    from sriovop.devcluster import ControlPlane

    cluster = clustergen.Cluster(nodes, policies)
    bodies = cluster.candidates(64)
    probe = {**bodies[0], "metadata": {"name": "probe", "namespace": NS},
             "spec": {**bodies[0]["spec"], "numVfs": 0}}
    with ControlPlane() as cp, tempfile.TemporaryDirectory() as tmp:
        client = Client(load_config(str(cp.kubeconfig)))
        seeded = time.monotonic()
        seed.base(client, cp.kubeconfig, NS)
        seed.nodes(client, cluster)
        seed.policies(client, cluster)
        seed_s = time.monotonic() - seeded
        hook = Webhook(cp, client, Path(tmp))
        floor = Webhook(cp, client, Path(tmp), FLOOR, f"{CONFIG}-floor")
        fresh_floor = Webhook(cp, client, Path(tmp), [*FLOOR, "--barrier"], f"{CONFIG}-floor-barrier")
        servers = {"webhook_floor": floor, "floor_with_barrier": fresh_floor, "with_webhook": hook}
        clients = [Client(load_config(str(cp.kubeconfig))) for _ in range(clients_n)]
        try:
            started = time.monotonic()
            hook.register(True, probe)  # also waits until the webhook serves (its caches synced)
            webhook_ready_s = time.monotonic() - started
            per_round: dict[str, list[dict[str, float]]] = {"api_server_alone": [], **{k: [] for k in servers}}
            assert cp.apiserver is not None and cp.etcd is not None
            processes = {"kube-apiserver": cp.apiserver.pid, "etcd": cp.etcd.pid, "admission server": 0,
                         "clients": os.getpid()}
            cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(processes, 0.0) for name in per_round}
            creates = dict.fromkeys(per_round, 0)
            rounds_before = hook.freshness_rounds()
            # each cache-holding server's count once it first serves (a floor still syncing refuses /metrics)
            collections_before: dict[str, dict[str, float]] = {}

            def side(name: str) -> float:
                for other, server in servers.items():  # first off, so the probe tells when `name` is on
                    if other != name and server.registered:
                        server.register(False, probe)
                if name in servers and not servers[name].registered:
                    servers[name].register(True, probe)
                    if name in ("with_webhook", "floor_with_barrier") and name not in collections_before:
                        collections_before[name] = servers[name].full_collections()
                pids = {**processes, "admission server": servers[name].pid() if name in servers else 0}
                before = {p: benchlib.cpu_seconds(pid) if pid else 0.0 for p, pid in pids.items()}
                lat = drive(clients, bodies, requests)
                for p, pid in pids.items():
                    cpu[name][p] += (benchlib.cpu_seconds(pid) - before[p]) if pid else 0.0
                creates[name] += len(lat)
                per_round[name].append({"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99),
                                        "max": max(lat)})
                return percentile(lat, 0.99)

            # The driver's own full collections would stop every client thread in whichever round they
            # land: its generated cluster and request bodies out of them, as the servers do theirs.
            freeze_now()
            # warm-up: one unrecorded round per side, then AFBAFB...
            benchlib.interleave({name: partial(side, name) for name in per_round}, rounds)
            webhook_requests = creates["with_webhook"]
            webhook_cpu = cpu["with_webhook"]["admission server"]
            barrier_rounds = hook.freshness_rounds() - rounds_before
            full_collections = {}
            for name, before in collections_before.items():
                after = servers[name].full_collections()
                full_collections[name] = {
                    "count": int(after["count"] - before["count"]),
                    "seconds": round(after["seconds"] - before["seconds"], 3),
                    "over_50ms": int((after["count"] - after["under_50ms"]) - (before["count"] - before["under_50ms"]))}
            rss = benchlib.rss_kib(hook.pid())
            inside = hook.mean_seconds()
            barrier = barrier_alone(client, clients_n)
            reads = reads_alone(client, {"kube-apiserver": cp.apiserver.pid, "etcd": cp.etcd.pid})
        finally:
            for server in servers.values():
                with contextlib.suppress(BaseException):
                    server.register(False, probe)
                server.stop()
            for c in clients:
                c.close()
            client.close()
    recorded = {k: v[-rounds:] for k, v in per_round.items()}  # drop the warm-up round
    alone = {q: Stat.of([r[q] for r in recorded["api_server_alone"]]) for q in ("p50", "p99")}
    hooked = {q: Stat.of([r[q] for r in recorded["with_webhook"]]) for q in ("p50", "p99")}
    floored = {q: Stat.of([r[q] for r in recorded["webhook_floor"]]) for q in ("p50", "p99")}
    fresh_floored = {q: Stat.of([r[q] for r in recorded["floor_with_barrier"]]) for q in ("p50", "p99")}
    return {
        "nodes": nodes, "policies": policies, "rounds": rounds, "requests_per_round": requests,
        "clients": clients_n, "seed_seconds": round(seed_s, 1), "webhook_ready_seconds": round(webhook_ready_s, 1),
        "api_server_alone_ms": {q: s.scaled(1000, 2) for q, s in alone.items()},
        "with_webhook_ms": {q: s.scaled(1000, 2) for q, s in hooked.items()},
        "added_p50_ms": round((hooked["p50"].median - alone["p50"].median) * 1000, 2),
        "added_p99_ms": round((hooked["p99"].median - alone["p99"].median) * 1000, 2),
        "webhook_floor_ms": {q: s.scaled(1000, 2) for q, s in floored.items()},
        "floor_added_p50_ms": round((floored["p50"].median - alone["p50"].median) * 1000, 2),
        "floor_added_p99_ms": round((floored["p99"].median - alone["p99"].median) * 1000, 2),
        "floor_with_barrier_ms": {q: s.scaled(1000, 2) for q, s in fresh_floored.items()},
        "floor_with_barrier_added_p99_ms": round((fresh_floored["p99"].median - alone["p99"].median) * 1000, 2),
        "p99_rounds_ms": {k: [round(r["p99"] * 1000, 1) for r in v] for k, v in recorded.items()},
        "webhook_cpu_ms_per_request": round(webhook_cpu * 1000 / max(1, webhook_requests), 3),
        # CPU per create by process and side (warm-up rounds included, the same on every side): with 8
        # clients the machine's two cores are saturated, so latency follows the CPU each create costs.
        "cpu_ms_per_create": {name: {p: round(v * 1000 / max(1, creates[name]), 3) for p, v in by.items()}
                              for name, by in cpu.items()},
        "freshness_rounds_per_create": round(barrier_rounds / max(1, webhook_requests), 3),
        # Full garbage collections in the two cache-holding servers during the rounds (warm-up included):
        # each stops every thread of the server, so a request in flight waits for it.
        "full_collections_during_rounds": full_collections,
        "webhook_rss_mib": round(rss / 1024, 1),
        # Inside the webhook (its /metrics, every request of the run): mean ms per review by path, and per
        # judgement waiting for the freshness barrier (one consistent read per cached kind + settle time).
        "webhook_inside_mean_ms": {k: round(v * 1000, 2) for k, v in inside.items()},
        "freshness_barrier_alone": barrier,
        "reads_alone": reads,
    }


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--nodes", default="500,2000,5000")
    parser.add_argument("--policies", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=400, help="per round, over all clients")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    started = benchlib.machine()
    sizes = [int(n) for n in args.nodes.split(",")]
    policies, rounds, requests = args.policies, args.rounds, args.requests
    if args.quick:
        sizes, policies, rounds, requests = [50], 20, 5, 80
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    results = []
    for n in sizes:
        print(f"admission: {n} nodes, {policies} policies", file=sys.stderr, flush=True)
        results.append(measure(n, policies, rounds, requests, args.clients))
    figures = []
    for r in results:
        n = r["nodes"]
        figures.append(Figure(
            f"admission_p99_added_ms_{n}_nodes", r["added_p99_ms"], "ms",
            baseline=r["api_server_alone_ms"]["p99"]["median"],
            baseline_what="p99 of the same dry-run creates with no webhook registered (interleaved rounds)",
            target=round(ADDED_OVER_BARRIER_FLOOR * r["floor_with_barrier_added_p99_ms"], 2),
            target_what=f"added p99 <= {ADDED_OVER_BARRIER_FLOOR} x what the floor server with the "
                        "read-your-writes barrier adds in the same run (issue 24; issue 15's 20 ms is below "
                        "that floor itself)",
            note=f"{r['policies']} policies, {r['clients']} clients; with webhook p99 "
                 f"{r['with_webhook_ms']['p99']['median']} ms (median of {r['rounds']} rounds); the floor "
                 f"(a server allowing everything unjudged) adds {r['floor_added_p99_ms']} ms, with the "
                 f"read-your-writes barrier {r['floor_with_barrier_added_p99_ms']} ms; the freshness "
                 f"barrier alone (8 threads) p50 {r['freshness_barrier_alone']['p50_ms']} ms, p99 "
                 f"{r['freshness_barrier_alone']['p99_ms']} ms; the barrier's limit=1 LISTs alone (1 thread) "
                 f"p50 / server CPU per read by kind and read "
                 + ", ".join(f"{k} {v['p50_ms']} / {v['server_cpu_ms']} ms" for k, v in r["reads_alone"].items())
                 + "; CPU ms per create (all processes): "
                 + ", ".join(f"{side} {sum(by.values()):.2f}" for side, by in r["cpu_ms_per_create"].items())
                 + f"; barrier rounds per create {r['freshness_rounds_per_create']}; full garbage collections "
                 "during the rounds (count, seconds, 50 ms or more): "
                 + ", ".join(f"{side} {c['count']}, {c['seconds']} s, {c['over_50ms']}"
                             for side, c in r["full_collections_during_rounds"].items())))
        figures.append(Figure(
            f"admission_p99_floor_added_ms_{n}_nodes", r["floor_added_p99_ms"], "ms",
            baseline=r["api_server_alone_ms"]["p99"]["median"],
            baseline_what="p99 of the same dry-run creates with no webhook registered (interleaved rounds)",
            note="what any Python admission server adds (two webhook calls over TLS, no judging): the part "
                 "of the added p99 no rule can remove"))
        figures.append(Figure(
            f"admission_p99_floor_with_barrier_added_ms_{n}_nodes", r["floor_with_barrier_added_p99_ms"], "ms",
            baseline=r["api_server_alone_ms"]["p99"]["median"],
            baseline_what="p99 of the same dry-run creates with no webhook registered (interleaved rounds)",
            note="the floor server waiting for the webhook's read-your-writes barrier (its informer caches, "
                 "one consistent read per cached kind per round) before it allows: what a webhook that "
                 "answers from caches and is correct right after a write costs before any rule runs"))
        cpu = r["cpu_ms_per_create"]
        figures.append(Figure(
            f"webhook_cpu_ms_per_admission_{n}_nodes", cpu["with_webhook"]["admission server"], "ms",
            baseline=cpu["floor_with_barrier"]["admission server"],
            baseline_what="the floor server with the same read-your-writes barrier (TLS, HTTP, informer caches, "
                          "consistent reads; no rule), CPU per create in the same interleaved rounds",
            target=WEBHOOK_CPU_TARGET_MS, target_what="the webhook process's CPU per admission <= 2.5 ms (issue 24)",
            note=f"{r['policies']} policies, {r['clients']} clients; the floor without the barrier "
                 f"{cpu['webhook_floor']['admission server']} ms; barrier rounds per create "
                 f"{r['freshness_rounds_per_create']}"))
    benchlib.emit("admission_e2e", figures, {"sizes": results}, args.out, started)


if __name__ == "__main__":
    main()
