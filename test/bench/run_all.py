"""`make bench`: run every benchmark, then write bench-results/<timestamp>/ with a summary and a report.

Each benchmark runs as its own process (`.venv/bin/python test/bench/<name>.py [--quick] --out
<dir>/<name>.json`), one after the other, so none competes with another for the CPU. Then:
- summary.json: every figure of every benchmark (value, unit, baseline, ratio, target, pass), plus
  the machine's load average at the start and end of each benchmark;
- report.md: the same as a table, each benchmark's notes, and PNG plots (matplotlib, the `bench`
  extra: `pip install -e '.[bench]'`; without it the report says so and has no plots).
`--quick` runs each benchmark at its smallest size (a smoke run, part of `make test`: it checks that
every benchmark runs and writes valid JSON, never a timing).

    .venv/bin/python test/bench/run_all.py [--quick] [--only admission_e2e,cli_start] [--results bench-results]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import benchlib
import report

#: The benchmarks `make bench` runs, in order (cheap ones first), with extra arguments for a full run.
BENCHMARKS: list[tuple[str, list[str]]] = [
    ("cli_start", []),
    ("status_cli", []),
    ("admission_e2e", []),
    ("webhook_cpu", []),
    ("operator_convergence", []),
    ("runtime_informer", []),
    ("daemon_steady", []),
    ("hub_filter", []),
    ("cni_add", []),
    # Last: the largest run (hollow fleets of 100, 500, 2,000 and 5,000 nodes, each size this machine's
    # cores and memory hold; faults at the smallest).
    ("rollout", ["--faults"]),
]


def run(name: str, extra: list[str], quick: bool, out_dir: Path, log: Path) -> dict[str, Any]:
    out = out_dir / f"{name}.json"
    argv = [sys.executable, str(Path(__file__).with_name(f"{name}.py")), "--out", str(out), *extra]
    if quick:
        argv.append("--quick")
    started = time.monotonic()
    print(f"== {name}{' (quick)' if quick else ''}", file=sys.stderr, flush=True)
    with log.open("w") as stderr:
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=stderr, cwd=benchlib.REPO, check=False)
    seconds = round(time.monotonic() - started, 1)
    if done.returncode != 0 or not out.exists():
        tail = log.read_text()[-3000:]
        print(f"   FAILED (exit {done.returncode}) after {seconds}s; log {log}:\n{tail}", file=sys.stderr)
        return {"benchmark": name, "error": f"exit {done.returncode}", "seconds": seconds, "log": str(log)}
    doc: dict[str, Any] = json.loads(out.read_text())
    doc["seconds"] = seconds
    print(f"   done in {seconds}s", file=sys.stderr, flush=True)
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="each benchmark at its smallest size")
    parser.add_argument("--only", help="comma-separated benchmark names")
    parser.add_argument("--results", type=Path, default=benchlib.REPO / "bench-results")
    parser.add_argument("--report-only", type=Path, metavar="DIR",
                        help="rebuild summary.json and report.md from the <name>.json files already in DIR")
    args = parser.parse_args()
    if args.report_only:
        docs = [json.loads((args.report_only / f"{n}.json").read_text()) for n, _ in BENCHMARKS
                if (args.report_only / f"{n}.json").exists()]
        summary = report.summarize(docs, quick=args.report_only.name.endswith("-quick"))
        (args.report_only / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        report.write(args.report_only, summary, docs)
        return 0
    chosen = [(n, a) for n, a in BENCHMARKS if not args.only or n in args.only.split(",")]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + ("-quick" if args.quick else "")
    out_dir = args.results / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    docs = [run(n, a, args.quick, out_dir, out_dir / f"{n}.log") for n, a in chosen]
    summary = report.summarize(docs, quick=args.quick)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    report.write(out_dir, summary, docs)
    print(f"results: {out_dir}", file=sys.stderr)
    failed = [d["benchmark"] for d in docs if "error" in d]
    if failed:
        print(f"benchmarks that did not run: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
