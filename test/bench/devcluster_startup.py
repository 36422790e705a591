"""Control-plane start-up time: etcd + kube-apiserver to /readyz, median of N runs, printed as JSON.

Baseline in the same run: etcd alone (the floor a start of the full control plane cannot beat).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sriovop.devcluster import ControlPlane, find_binaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    binaries = find_binaries()
    total: list[float] = []
    etcd_only: list[float] = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as d:
            cp = ControlPlane(Path(d), binaries=binaries)
            t0 = time.monotonic()
            cp._start_etcd(binaries)  # the floor: etcd healthy
            etcd_only.append(time.monotonic() - t0)
            cp.stop()
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            cp = ControlPlane(Path(d), binaries=binaries).start()
            total.append(time.monotonic() - t0)
            cp.stop()
        print(f"run {i + 1}/{args.runs}: ready in {total[-1]:.2f}s", flush=True, file=sys.stderr)
    print(json.dumps({
        "benchmark": "devcluster_startup",
        "runs": args.runs,
        "start_to_ready_s": {"median": round(statistics.median(total), 3), "min": round(min(total), 3),
                             "max": round(max(total), 3)},
        "baseline_etcd_only_s": {"median": round(statistics.median(etcd_only), 3)},
        "ratio_to_etcd_only": round(statistics.median(total) / statistics.median(etcd_only), 2),
    }, indent=2))


if __name__ == "__main__":
    main()
