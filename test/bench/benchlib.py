"""What every benchmark shares: interleaved sampling, one statistic, figures with targets, JSON output.

Why: a ratio is only honest when both sides ran on the same machine state with the same statistic.
`interleave` runs the sides ABAB... in one process (a shared machine's load drifts by the minute, so
back-to-back blocks would compare different machines), and `Stat` is the median of >= 5 samples with
min and max, on both sides. A `Figure` carries its baseline, ratio, target and pass/fail, which is
what `make bench` collects into summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # so `.venv/bin/python test/bench/<name>.py` works from any directory
    sys.path.insert(0, str(REPO))


@dataclass(frozen=True)
class Stat:
    """Median with min/max of samples (seconds, bytes, ... as measured)."""

    median: float
    min: float
    max: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stat:
        if not samples:
            raise ValueError("no samples")
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))

    def scaled(self, factor: float, digits: int = 3) -> dict[str, float]:
        return {"median": round(self.median * factor, digits), "min": round(self.min * factor, digits),
                "max": round(self.max * factor, digits), "n": self.n}


def interleave(sides: dict[str, Callable[[], float]], rounds: int, warmup: int = 1) -> dict[str, list[float]]:
    """Run every side once per round, in the same order (ABAB...), after `warmup` unrecorded rounds each;
    returns each side's samples (whatever its callable returns: usually seconds)."""
    for _ in range(warmup):
        for fn in sides.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, fn in sides.items():
            samples[name].append(fn())
    return samples


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return run


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Figure:
    """One reported number. `target` is an upper bound unless `higher_is_better`."""

    name: str
    #: None: not measured in this run (the note says why); a figure with a target then fails.
    value: float | None
    unit: str
    baseline: float | None = None
    baseline_what: str = ""
    target: float | None = None
    target_what: str = ""
    higher_is_better: bool = False
    note: str = ""
    ratio: float | None = field(default=None)
    passed: bool | None = field(default=None)

    def __post_init__(self) -> None:
        if self.value is None:  # not measured (a size this machine cannot reach): never a pass
            self.passed = False if self.target is not None else None
            return
        if self.ratio is None and self.unit == "x":
            self.ratio = self.value  # already a ratio (its baseline is the denominator's absolute value)
        elif self.ratio is None and self.baseline:
            self.ratio = round(self.value / self.baseline, 3)
        if self.target is not None:
            self.passed = self.value >= self.target if self.higher_is_better else self.value <= self.target

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["pass"] = out.pop("passed")
        return out


def machine() -> dict[str, Any]:
    """What the numbers were measured on: a figure without its machine load is not comparable."""
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "python": sys.version.split()[0], "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def arg_parser(doc: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    parser.add_argument("--quick", action="store_true", help="smallest size: a smoke run (make test)")
    parser.add_argument("--out", type=Path, help="also write the JSON document here")
    return parser


def emit(name: str, figures: Sequence[Figure], details: dict[str, Any], out: Path | None,
         started: dict[str, Any]) -> dict[str, Any]:
    """Print (and write) one benchmark's JSON document: its figures, details, and the machine at start
    and end (load average)."""
    doc = {"benchmark": name, "figures": [f.to_json() for f in figures], "details": details,
           "machine_at_start": started, "machine_at_end": machine()}
    text = json.dumps(doc, indent=2, default=str)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    return doc


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int | None = None) -> float:
    """User+system CPU seconds of a process (this one when pid is None), from /proc."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
