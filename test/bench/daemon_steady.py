"""The config daemon at rest: API requests, writes, memory and CPU of a configured node where nothing changes.

What it measures: a real `sriovop config-daemon` process (default flags) on a simulated SR-IOV host
(two Intel XXV710 ports, network namespaces and veths: sriovop/sim), its NodeState created
as the operator would. After its first sync (Succeeded) and a short settling time, a window of W
seconds (600 in a full run, 30 with --quick) in which nothing changes. Requests are counted by
kube-apiserver itself, from its audit log (level Metadata): `apiserver_request_total` has no user or
user-agent label, the audit log has both, and the daemon runs as its own user. Figures:
- daemon_steady_requests_per_min: the daemon's requests per minute in the window, watches excluded
  (a watch is one long request; its reconnects are reported separately). Target <= 1;
- daemon_steady_writes: create/update/patch/delete requests in the window. Target 0;
- daemon_cpu_seconds_per_hour and daemon_rss_mib over the window (from /proc, no baseline);
- daemon_first_status_write_seconds: process start -> the first NodeState status write it made.

    .venv/bin/python test/bench/daemon_steady.py [--window 600] [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import benchlib
from benchlib import Figure

NS = "sriov-network-operator"
NODE = "steady-node"
USER = "bench-config-daemon"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}


def audit_events(path: Path, user: str) -> list[dict[str, Any]]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if (ev.get("user") or {}).get("username") == user:
            out.append(ev)
    return out


def when(ev: dict[str, Any]) -> float:
    return datetime.fromisoformat(ev["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--window", type=float, default=600.0, help="seconds at rest that are counted")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after the first sync, not counted")
    args = parser.parse_args()
    if args.quick:
        args.window, args.settle = 30.0, 5.0
    started_machine = benchlib.machine()
    from sriovop.api.v1 import consts
    from sriovop.devcluster import ControlPlane
    from sriovop.devcluster.audit import AUDIT_LOG, audit_args
    from sriovop.sim.host import SimHost
    from test.support.daemon_harness import client_for, prepare_cluster, wait_sync
    from test.support.kube import apply_crds, create_namespace

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        (tmp / "audit-policy.yaml").write_text(AUDIT_POLICY)
        audit = tmp / AUDIT_LOG
        cp = ControlPlane(extra_apiserver_args=audit_args(tmp, tmp / "audit-policy.yaml"))
        with cp, SimHost(tmp / "host", ["xxv710:2"]) as sim:
            apply_crds(cp.kubeconfig, sorted((benchlib.REPO / "manifests" / "crds").glob("*.yaml")))
            create_namespace(cp.kubeconfig, NS)
            client = client_for(cp.kubeconfig)
            prepare_cluster(client, NS, NODE)
            kubeconfig = cp.mint_user(USER, ["system:masters"])
            log = (tmp / "daemon.log").open("w")
            t_start = time.time()
            proc = subprocess.Popen(
                [sys.executable, "-m", "sriovop.cli", "config-daemon", "--node-name", NODE, "--host-root",
                 str(sim.root), "--simulated-host", "--kubeconfig", str(kubeconfig), "--namespace", NS,
                 "--log-format", "json"],
                env={**os.environ, "NAMESPACE": NS}, stdout=log, stderr=subprocess.STDOUT, cwd=benchlib.REPO)
            try:
                wait_sync(client, NS, NODE, consts.SYNC_STATUS_SUCCEEDED, timeout=300)
                first_sync_s = time.time() - t_start
                time.sleep(args.settle)
                cpu0, t0 = benchlib.cpu_seconds(proc.pid), time.time()
                print(f"daemon at rest; counting for {args.window:.0f}s", file=sys.stderr, flush=True)
                time.sleep(args.window)
                cpu1, t1 = benchlib.cpu_seconds(proc.pid), time.time()
                rss = benchlib.rss_kib(proc.pid)
                alive = proc.poll() is None
            finally:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                log.close()
            if not alive:
                raise SystemExit(f"the daemon exited: {(tmp / 'daemon.log').read_text()[-2000:]}")
            events = audit_events(audit, USER)
    status_writes = [e for e in events if e.get("verb") in WRITE_VERBS
                     and (e.get("objectRef") or {}).get("subresource") == "status"]
    first_status = min((when(e) for e in status_writes), default=None)
    in_window = [e for e in events if t0 <= when(e) < t1]
    non_watch = [e for e in in_window if e.get("verb") != "watch"]
    writes = [e for e in in_window if e.get("verb") in WRITE_VERBS]
    minutes = (t1 - t0) / 60
    by = Counter(f"{e.get('verb')} {(e.get('objectRef') or {}).get('resource', e.get('requestURI'))}"
                 for e in in_window)
    details = {
        "window_seconds": round(t1 - t0, 1), "first_sync_seconds": round(first_sync_s, 2),
        "requests_in_window_by_verb_resource": dict(by.most_common()),
        "watch_requests_in_window": sum(1 for e in in_window if e.get("verb") == "watch"),
        "all_requests_since_start": len(events),
        "counted_by": "kube-apiserver audit log (level Metadata), user " + USER,
    }
    cpu_per_hour = (cpu1 - cpu0) / (t1 - t0) * 3600
    figures = [
        Figure("daemon_steady_requests_per_min", round(len(non_watch) / minutes, 3), "req/min",
               target=1.0, target_what="<= 1 request per minute besides watches",
               note=f"{len(non_watch)} requests in {minutes:.1f} min: {dict(by.most_common(5))}"),
        Figure("daemon_steady_writes", len(writes), "writes", target=0, target_what="no write at rest"),
        Figure("daemon_cpu_seconds_per_hour", round(cpu_per_hour, 2), "s/h", note="over the window"),
        Figure("daemon_rss_mib", round(rss / 1024, 1), "MiB", note="at the end of the window"),
        Figure("daemon_first_status_write_seconds",
               round(first_status - t_start, 2) if first_status else -1.0, "s",
               note="from process start to its first NodeState status write (audit timestamp)"),
    ]
    benchlib.emit("daemon_steady", figures, details, args.out, started_machine)


if __name__ == "__main__":
    main()
