"""Graceful and crash handover of the elector with the Lease watch (ours) against client-go's polling,
measured in the same run on a private control plane, printed as JSON. Not a test.

Baseline (same run): the same electors with `watch=False`, i.e. client-go's algorithm, whose candidates
only notice a release at their next jittered poll ([RetryPeriod, 2.2*RetryPeriod)).
Graceful: the leader's run() is stopped (release on cancel) → the follower's on_started_leading.
Crash: every request of the leader hangs (no release) → the follower's on_started_leading.

Usage: .venv/bin/python test/bench/failover_handover.py [--rounds 8] [--crash-rounds 3]
Defaults are client-go's durations (15/10/2 s); a crash round takes about LeaseDuration.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

import benchlib  # noqa: F401  (puts the repository on sys.path: runnable as docs/benchmarks.md says)

from sriovop.devcluster import ControlPlane
from sriovop.logsetup import configure_logging
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import NAMESPACE
from sriovop.runtime.leaderelection import LeaderElectionConfig
from test.support.leaderelection_harness import Candidate, make_candidate
from test.support.poll import wait_for


def one_handover(cp: ControlPlane, ns: str, lease: str, config: LeaderElectionConfig, crash: bool) -> float:
    a = make_candidate(cp.kubeconfig, ns, f"{lease}-a", lease=lease, config=config).start()
    wait_for(lambda: a.started_at is not None, 60, "a to lead")
    b = make_candidate(cp.kubeconfig, ns, f"{lease}-b", lease=lease, config=config).start()
    wait_for(lambda: f"{lease}-a" in b.new_leaders, 60, "b to see a lead")
    time.sleep(config.retry_period * 1.5)  # b is in its steady acquire loop, a has renewed at least once
    try:
        t0 = time.monotonic()
        if crash:
            a.crash()
        else:
            a.stop.set()
        wait_for(lambda: b.started_at is not None, 3 * config.lease_duration + 30, "b to take over")
        assert b.started_at is not None
        return b.started_at - t0
    finally:
        stop_all([a, b])


def stop_all(candidates: list[Candidate]) -> None:
    for c in candidates:
        c.stop.set()
        c.client.unblock()
    for c in candidates:
        if c.thread is not None:
            c.thread.join(30)


def figures(samples: list[float]) -> dict[str, Any]:
    return {"n": len(samples), "median_s": round(statistics.median(samples), 3),
            "max_s": round(max(samples), 3), "min_s": round(min(samples), 3)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8, help="graceful handovers per mode")
    parser.add_argument("--crash-rounds", type=int, default=3, help="crash handovers per mode")
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--renew-deadline", type=float, default=10.0)
    parser.add_argument("--retry-period", type=float, default=2.0)
    args = parser.parse_args()
    configure_logging("error", "console")
    ours = LeaderElectionConfig(lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
                                retry_period=args.retry_period, watch=True)
    polling = replace(ours, watch=False)
    cp = ControlPlane().start()
    try:
        client = Client(load_config(str(cp.kubeconfig)))
        client.create(NAMESPACE, {"metadata": {"name": "bench"}})
        out: dict[str, Any] = {"durations_s": [ours.lease_duration, ours.renew_deadline, ours.retry_period]}
        n = 0
        for label, config in (("watch", ours), ("polling_baseline", polling)):
            graceful, crash = [], []
            for _ in range(args.rounds):
                n += 1
                graceful.append(one_handover(cp, "bench", f"g{n}", config, crash=False))
                print(f"{label} graceful {graceful[-1]:.3f}s", file=sys.stderr, flush=True)
            for _ in range(args.crash_rounds):
                n += 1
                crash.append(one_handover(cp, "bench", f"c{n}", config, crash=True))
                print(f"{label} crash {crash[-1]:.3f}s", file=sys.stderr, flush=True)
            out[label] = {"graceful": figures(graceful)} | ({"crash": figures(crash)} if crash else {})
        out["graceful_median_speedup"] = round(
            out["polling_baseline"]["graceful"]["median_s"] / max(out["watch"]["graceful"]["median_s"], 1e-3), 1)
        print(json.dumps(out, indent=2))
        return 0
    finally:
        cp.stop()


if __name__ == "__main__":
    sys.exit(main())
