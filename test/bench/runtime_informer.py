"""Informer initial sync and memory on a private real control plane; prints one JSON document.

1. Initial sync of N objects, 10,000 by default: a throwaway CRD's custom resources (~1 KB each), and
   Nodes of a generated cluster (test/bench/clustergen.py: varied labels, provider IDs):
   - ours: SharedIndexInformer start -> has_synced (paged LIST at resourceVersion "0", decode to
     frozen dicts without managedFields, store + namespace index);
   - naive: the official kubernetes client's path with the SAME request semantics (paged LIST, limit
     500, resourceVersion "0", so both are served from the API server's watch cache) into its return
     types (model objects for Nodes, dicts for custom objects), then its watch opened; also reported
     with the official client's default quorum LIST (no resourceVersion), which is slower for a reason
     that has nothing to do with the client;
   - floor: the same paged LIST at resourceVersion "0" with only json.loads, nothing kept.
   Every method runs once unrecorded (warm-up: TLS, imports, the API server's cache), then the methods
   run interleaved, round after round; median of the rounds with min/max. Headline figures:
   naive (same semantics) / ours (target >= 1) and ours / floor (target <= 1.5).
2. Cache memory: RSS growth per cached object (a fresh process) against the JSON size of the same
   object as cached: without managedFields when the informer strips them, with them when it keeps them.
3. Handler lag while a separate writer process patches ConfigMaps as fast as the API server allows.

    .venv/bin/python test/bench/runtime_informer.py [--count 10000] [--reps 5] [--lag-seconds 15] [--quick]
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import benchlib
import clustergen
import structlog
from benchlib import Figure, Stat
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from sriovop.devcluster import ControlPlane
from sriovop.runtime.cache import FuncHandler, SharedIndexInformer
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import CONFIG_MAP, CUSTOM_RESOURCE_DEFINITION, NAMESPACE, NODE, Kind

REPO = benchlib.REPO

GROUP = "bench.sriovop.io"
WIDGET = Kind(GROUP, "v1", "Widget", "widgets")
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}
PAD = "x" * 560


def widget(i: int) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
            "metadata": {"name": f"w-{i:05d}", "labels": {"app": "bench", "shard": str(i % 16)}},
            "spec": {"networkNamespace": f"ns-{i % 50}", "resourceName": "intel_sriov_netdevice",
                     "vlan": i % 4096, "spoofChk": "on", "trust": "off", "capabilities": '{"mac": true}',
                     "metaPlugins": PAD}}


_NODES = clustergen.Cluster(0, policies=0)


def node(i: int) -> dict[str, Any]:
    return _NODES.node(i)


def populate(c: Client, kind: Kind, ns: str | None, n: int, build: Any) -> None:
    def one(i: int) -> None:
        try:
            c.create(kind, build(i), ns)
        except Conflict:
            pass
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(one, range(n)))


def wait_watch_cache(c: Client, kind: Kind, ns: str | None, n: int) -> None:
    """An RV="0" LIST is served by the watch cache, which may trail fresh writes by a moment."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(c.list_page(kind, ns, resource_version="0").items) == n:
            return
        time.sleep(0.2)
    raise RuntimeError("watch cache did not catch up")


def wait_established(c: Client, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        crd = c.get(CUSTOM_RESOURCE_DEFINITION, name)
        if any(cond["type"] == "Established" and cond["status"] == "True"
               for cond in ((crd.get("status") or {}).get("conditions") or [])):
            return
        time.sleep(0.2)
    raise RuntimeError(f"CRD {name} not Established")


# -- sync timings ---------------------------------------------------------------------------------


def time_ours(c: Client, kind: Kind, ns: str | None, n: int) -> float:
    inf = SharedIndexInformer(c, kind, namespace=ns)
    stop = threading.Event()
    t0 = time.perf_counter()
    inf.start(stop)
    assert inf.wait_for_cache_sync(600)
    dt = time.perf_counter() - t0
    assert len(inf.store) == n, (len(inf.store), n)
    stop.set()
    inf.stop()
    return dt


def time_floor(c: Client, kind: Kind, ns: str | None, n: int, rv: str | None) -> float:
    t0 = time.perf_counter()
    count, cont = 0, None
    while True:
        page = c.list_page(kind, ns, limit=500, continue_=cont, resource_version=None if cont else rv)
        count += len(page.items)
        if not page.continue_:
            break
        cont = page.continue_
    dt = time.perf_counter() - t0
    assert count == n
    return dt


def time_naive(api: k8s.ApiClient, kind: Kind, ns: str | None, n: int, rv: str | None) -> float:
    core = k8s.CoreV1Api(api)
    custom = k8s.CustomObjectsApi(api)
    t0 = time.perf_counter()
    items: list[Any] = []
    cont = None
    last_rv = ""
    while True:
        kw: dict[str, Any] = {"limit": 500}
        if cont:
            kw["_continue"] = cont
        elif rv is not None:
            kw["resource_version"] = rv
        if kind is NODE:
            models: Any = core.list_node(**kw)
            items.extend(models.items)
            cont, last_rv = models.metadata._continue, models.metadata.resource_version
        else:
            dicts: Any = custom.list_namespaced_custom_object(GROUP, "v1", ns, kind.plural, **kw)
            items.extend(dicts["items"])
            cont, last_rv = dicts["metadata"].get("continue"), dicts["metadata"]["resourceVersion"]
        if not cont:
            break
    w = k8s_watch.Watch()
    if kind is NODE:
        stream = w.stream(core.list_node, resource_version=last_rv, timeout_seconds=300,
                          allow_watch_bookmarks=True, _request_timeout=(5, 1))
    else:
        stream = w.stream(custom.list_namespaced_custom_object, GROUP, "v1", ns, kind.plural,
                          resource_version=last_rv, timeout_seconds=300, allow_watch_bookmarks=True,
                          _request_timeout=(5, 1))
    dt = time.perf_counter() - t0  # the stream object exists; its request starts lazily (not counted)
    w.stop()
    del stream
    assert len(items) == n
    return dt


# -- memory (child process) -----------------------------------------------------------------------


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def memory_child(kubeconfig: str, plural: str, ns: str, strip: bool, json_bytes_per_object: float,
                 compact: bool) -> None:
    c = Client(load_config(kubeconfig))
    kind = WIDGET if plural == "widgets" else NODE
    ns = ns if kind.namespaced else ""
    c.list_page(kind, ns or None, limit=1)  # warm the TLS connection and imports before the baseline
    gc.collect()
    before = rss_bytes()
    inf = SharedIndexInformer(c, kind, namespace=ns or None, strip_managed_fields=strip, compact=compact)
    stop = threading.Event()
    inf.start(stop)
    assert inf.wait_for_cache_sync(600)
    gc.collect()
    t0 = time.perf_counter()
    listed = inf.store.list()
    list_ms = (time.perf_counter() - t0) * 1000
    del listed
    time.sleep(0.5)
    after = rss_bytes()
    n = len(inf.store)
    print(json.dumps({"objects": n, "json_bytes_per_object": json_bytes_per_object,
                      "rss_growth_per_object": (after - before) / n, "store_list_all_ms": round(list_ms, 2)}))
    stop.set()
    inf.stop()


def json_size_per_object(c: Client, kind: Kind, ns: str | None, managed_fields: bool) -> float:
    """Each object's compact JSON as the cache holds it (with or without managedFields), averaged."""
    items = c.list(kind, ns)
    if not managed_fields:
        items = [{**i, "metadata": {k: v for k, v in i["metadata"].items() if k != "managedFields"}} for i in items]
    return sum(len(json.dumps(i, separators=(",", ":"))) for i in items) / len(items)


def measure_memory(kubeconfig: str, plural: str, ns: str | None, strip: bool, size: float,
                   compact: bool = False) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--memory-child", kubeconfig, plural, ns or "", str(int(strip)),
                          str(size), str(int(compact))],
                         check=True, capture_output=True, text=True, cwd=REPO)
    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    res["strip_managed_fields"] = strip
    res["compact_store"] = compact
    res["ratio_rss_to_json"] = round(res["rss_growth_per_object"] / res["json_bytes_per_object"], 3)
    return res


# -- handler lag ----------------------------------------------------------------------------------


def writer_process(kubeconfig: str, ns: str, names: list[str], seconds: float, threads: int,
                   out: Any) -> None:
    c = Client(load_config(kubeconfig))
    records: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def loop(k: int) -> None:
        mine = names[k::threads]
        i = 0
        while time.monotonic() < end:
            name = mine[i % len(mine)]
            i += 1
            t0 = time.monotonic()
            obj = c.patch(CONFIG_MAP, name, {"data": {"n": str(i)}}, ns)
            t1 = time.monotonic()
            with lock:
                records.append((obj["metadata"]["resourceVersion"], t0, t1))

    ts = [threading.Thread(target=loop, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.send(records)


def measure_lag(kubeconfig: str, c: Client, ns: str, seconds: float, threads: int) -> dict[str, Any]:
    names = [f"lag-{i}" for i in range(64)]
    populate(c, CONFIG_MAP, ns, 64, lambda i: {"metadata": {"name": names[i]}, "data": {"n": "0"}})
    received: dict[str, float] = {}
    inf = SharedIndexInformer(c, CONFIG_MAP, namespace=ns)
    inf.add_event_handler(FuncHandler(
        update=lambda _old, new: received.__setitem__(new["metadata"]["resourceVersion"], time.monotonic())))
    stop = threading.Event()
    inf.start(stop)
    assert inf.wait_for_cache_sync(60)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=writer_process, args=(kubeconfig, ns, names, seconds, threads, child))
    p.start()
    records = parent.recv()
    p.join()
    time.sleep(2.0)
    stop.set()
    inf.stop()
    after_ack, after_start, missing = [], [], 0
    for rv, t0, t1 in records:
        t = received.get(rv)
        if t is None:
            missing += 1
            continue
        after_ack.append(max(0.0, t - t1) * 1000)
        after_start.append((t - t0) * 1000)

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3) if xs else float("nan")

    return {"writes": len(records), "writes_per_second": round(len(records) / seconds, 1),
            "writer_threads": threads, "events_missing": missing,
            "lag_after_write_ack_ms": {"p50": pct(after_ack, 0.5), "p99": pct(after_ack, 0.99),
                                       "max": pct(after_ack, 1.0)},
            "lag_after_write_start_ms": {"p50": pct(after_start, 0.5), "p99": pct(after_start, 0.99)},
            "target_p99_ms": 50}


def measure_request_cpu(c: Client, ns: str, reads: int, rounds: int) -> dict[str, Any]:
    """CPU per one-item LIST of ConfigMaps (the freshness barrier's read, the smallest request a
    controller makes): through `Client.list_page`, against the floor of the same GET with the same
    headers on one kept-alive `http.client` connection and `json.loads` of the body. What lies between
    them is our client's and urllib3's Python layers per request."""
    import http.client
    import ssl
    from urllib.parse import urlencode, urlparse

    cfg = c.config.configuration
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if getattr(cfg, "cert_file", None):
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    url = urlparse(c.config.host)
    conn = http.client.HTTPSConnection(url.hostname or "", url.port, context=ctx)
    path = CONFIG_MAP.collection_path(ns) + "?" + urlencode({"limit": 1})
    headers = c._headers()  # the same authentication as ours

    def floor() -> None:
        conn.request("GET", path, headers=headers)
        json.loads(conn.getresponse().read())

    def ours() -> None:
        c.list_page(CONFIG_MAP, ns, limit=1)

    def cpu_per_read(fn: Any) -> float:
        c0 = time.process_time()
        for _ in range(reads):
            fn()
        return (time.process_time() - c0) / reads

    try:
        runs = benchlib.interleave({"ours": lambda: cpu_per_read(ours), "floor": lambda: cpu_per_read(floor)},
                                   rounds, warmup=1)
    finally:
        conn.close()
    return {"reads_per_round": reads, **{m: Stat.of(v).scaled(1e6, 1) for m, v in runs.items()}}


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # stdout is the JSON
    ap = benchlib.arg_parser(__doc__)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lag-seconds", type=float, default=15.0)
    ap.add_argument("--writer-threads", type=int, default=8)
    ap.add_argument("--lag-only", action="store_true", help="skip the sync and memory measurements")
    args = ap.parse_args()
    if args.quick:
        args.count, args.reps, args.lag_seconds = 500, 5, 3.0
    started = benchlib.machine()
    figures: list[Figure] = []
    cp = ControlPlane().start()
    try:
        c = Client(load_config(cp.kubeconfig))
        api = k8s_config.new_client_from_config(config_file=str(cp.kubeconfig))
        c.create(CUSTOM_RESOURCE_DEFINITION, CRD)
        wait_established(c, f"widgets.{GROUP}")
        results: dict[str, Any] = {"objects": args.count, "reps": args.reps}
        kinds = [] if args.lag_only else [(WIDGET, widget, "custom_resources"), (NODE, node, "nodes")]
        for kind, build, label in kinds:
            ns: str | None = None
            if kind.namespaced:
                ns = f"bench-{kind.plural}"
                c.create(NAMESPACE, {"metadata": {"name": ns}})
            t0 = time.perf_counter()
            populate(c, kind, ns, args.count, build)
            create_s = time.perf_counter() - t0
            wait_watch_cache(c, kind, ns, args.count)
            methods = {
                "ours": lambda k=kind, n=ns: time_ours(c, k, n, args.count),
                "naive_official_rv0": lambda k=kind, n=ns: time_naive(api, k, n, args.count, "0"),
                "naive_official_quorum": lambda k=kind, n=ns: time_naive(api, k, n, args.count, None),
                "floor_raw_list_rv0": lambda k=kind, n=ns: time_floor(c, k, n, args.count, "0"),
            }
            cpu: dict[str, list[float]] = {m: [] for m in methods}

            def timed(m: str, fn: Any, cpu: dict[str, list[float]] = cpu) -> Any:
                def run() -> float:
                    gc.collect()
                    c0 = time.process_time()
                    took: float = fn()
                    cpu[m].append(time.process_time() - c0)
                    return took
                return run

            runs = benchlib.interleave({m: timed(m, fn) for m, fn in methods.items()}, args.reps, warmup=1)
            stat = {m: Stat.of(v) for m, v in runs.items()}
            cpu_med = {m: Stat.of(v[1:]).median for m, v in cpu.items()}  # without the warm-up
            ours, naive, floor = (stat["ours"].median, stat["naive_official_rv0"].median,
                                  stat["floor_raw_list_rv0"].median)
            results[label] = {
                "create_seconds": round(create_s, 2),
                "sync_seconds": {m: st.scaled(1, 4) for m, st in stat.items()},
                "ratio_naive_over_ours": round(naive / ours, 2),
                "ratio_naive_quorum_over_ours": round(stat["naive_official_quorum"].median / ours, 2),
                "ratio_ours_over_floor": round(ours / floor, 2),
                "client_cpu_seconds_median": {m: round(v, 4) for m, v in cpu_med.items()},
                "cpu_ratio_naive_over_ours": round(cpu_med["naive_official_rv0"] / cpu_med["ours"], 2),
                "cpu_ratio_ours_over_floor": round(cpu_med["ours"] / cpu_med["floor_raw_list_rv0"], 2),
            }
            # quick (a smoke run): only the configuration the figure reports
            memory_variants = ((True, False),) if args.quick else ((True, False), (False, False), (True, True))
            results[label]["memory"] = [
                measure_memory(str(cp.kubeconfig), kind.plural, ns, strip,
                               json_size_per_object(c, kind, ns, managed_fields=not strip), compact)
                for strip, compact in memory_variants]
            print(json.dumps({label: results[label]}), file=sys.stderr)
            figures.append(Figure(
                f"informer_sync_ratio_naive_over_ours_{label}", results[label]["ratio_naive_over_ours"], "x",
                baseline=round(naive, 3), baseline_what=f"seconds: the official client's paged LIST of "
                f"{args.count} at resourceVersion 0 into its types, then its watch (same requests as ours)",
                target=1.0, higher_is_better=True,
                target_what="naive / ours >= 1: no slower than the official client, which keeps no store or index",
                note=f"ours {round(ours, 3)} s; with the official client's default quorum LIST the ratio is "
                     f"{results[label]['ratio_naive_quorum_over_ours']}"))
            figures.append(Figure(
                f"informer_sync_ratio_ours_over_floor_{label}", results[label]["ratio_ours_over_floor"], "x",
                baseline=round(floor, 3), baseline_what="seconds: the same paged LIST with json.loads only",
                target=1.5, target_what="ours / floor <= 1.5"))
            stripped = results[label]["memory"][0]
            figures.append(Figure(
                f"informer_rss_over_json_{label}", stripped["ratio_rss_to_json"], "x",
                baseline=round(stripped["json_bytes_per_object"]), baseline_what="bytes of JSON per object as "
                "cached (managedFields stripped, as the informer does)", target=2.0,
                target_what="RSS growth per object <= 2x its JSON"))
        lag_ns = "bench-lag"
        c.create(NAMESPACE, {"metadata": {"name": lag_ns}})
        results["handler_lag"] = measure_lag(str(cp.kubeconfig), c, lag_ns, args.lag_seconds, args.writer_threads)
        request = results["request_cpu_us"] = measure_request_cpu(c, lag_ns, 100 if args.quick else 500, args.reps)
        figures.append(Figure(
            "client_request_cpu_us_one_item_list", request["ours"]["median"], "us",
            baseline=request["floor"]["median"], baseline_what="us of CPU: the same GET with the same headers "
            "on a kept-alive http.client connection, json.loads of the body (interleaved rounds)",
            note=f"median of {args.reps} rounds of {request['reads_per_round']} LISTs (limit=1) of 64 "
                 "ConfigMaps; the freshness barrier's reads and every small request pay this per call"))
    finally:
        cp.stop()
    benchlib.emit("runtime_informer", figures, results, args.out, started)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--memory-child":
        memory_child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1", float(sys.argv[6]),
                     sys.argv[7] == "1")
    else:
        main()
