"""Start-up time of `sriovop --help` and of every subcommand's `--help`, against `python -c pass`.

Measures the wall time of a fresh process (interpreter start, imports, click parsing, help text) for
each command, interleaved with the floor `python -c pass` run by the same interpreter of the same
virtualenv (ABAB..., so both meet the same machine load), median of the rounds with min/max.
Why this baseline: every process start pays the interpreter; what sriovop can change is what it
imports on top. Target (issue 15): every subcommand starts in <= 3 x floor + 150 ms.

    .venv/bin/python test/bench/cli_start.py [--rounds 9] [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import time

import benchlib
from benchlib import Figure, Stat

COMMANDS = [[], ["operator"], ["webhook"], ["config-daemon"], ["status"], ["demo"], ["dev"], ["gen"],
            ["wait-for-config"]]


def run(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=benchlib.REPO)
    return time.perf_counter() - start


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    started = benchlib.machine()
    rounds = 5 if args.quick else args.rounds
    sides = {"python -c pass": lambda: run([sys.executable, "-c", "pass"])}
    for cmd in COMMANDS:
        argv = [sys.executable, "-m", "sriovop.cli", *cmd, "--help"]
        sides[" ".join(["sriovop", *cmd, "--help"])] = lambda argv=argv: run(argv)
    samples = benchlib.interleave(sides, rounds)
    floor = Stat.of(samples.pop("python -c pass"))
    details = {"rounds": rounds, "floor_ms": floor.scaled(1000, 1),
               "commands_ms": {name: Stat.of(s).scaled(1000, 1) for name, s in samples.items()}}
    target_ms = 3 * floor.median * 1000 + 150
    worst_name, worst = max(((n, Stat.of(s).median) for n, s in samples.items()), key=lambda x: x[1])
    figures = [
        Figure("cli_help_ms", round(Stat.of(samples["sriovop --help"]).median * 1000, 1), "ms",
               baseline=round(floor.median * 1000, 1), baseline_what="python -c pass (same venv, interleaved)",
               target=round(target_ms, 1), target_what="3 x floor + 150 ms"),
        Figure("cli_start_ms_over_python_floor", round(worst * 1000, 1), "ms",
               baseline=round(floor.median * 1000, 1), baseline_what="python -c pass (same venv, interleaved)",
               target=round(target_ms, 1), target_what="3 x floor + 150 ms",
               note=f"slowest command: {worst_name} (median of {rounds})"),
    ]
    benchlib.emit("cli_start", figures, details, args.out, started)


if __name__ == "__main__":
    main()
