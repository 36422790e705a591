"""Start-up time of `sriovop --help` and of every subcommand's `--help`, against `python -c pass`.

Measures the wall time of a fresh process (interpreter start, imports, click parsing, help text) for
each command, interleaved with the floor `python -c pass` run by the same interpreter of the same
virtualenv (ABAB..., so both meet the same machine load), median of the rounds with min/max.
Why this baseline: every process start pays the interpreter; what sriovop can change is what it
imports on top. Target (issue 15): every subcommand starts in <= 3 x floor + 150 ms.
Each process's CPU time (user + system, from wait4) is recorded too, in the same rounds: on this
shared machine the wall time of a 50 ms process mostly measures the run queue (load average), while its
CPU time is what the imports cost.

    .venv/bin/python test/bench/cli_start.py [--rounds 9] [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import benchlib
from benchlib import Figure, Stat


def commands() -> list[list[str]]:
    """`sriovop` itself and every subcommand it lists (so a new subcommand is measured too)."""
    import click

    from sriovop import cli

    return [[], *([name] for name in cli.main.list_commands(click.Context(cli.main)))]


def run(args: list[str], cpu: list[float]) -> float:
    """Wall seconds of one process start (returned) and its CPU seconds (appended to `cpu`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=benchlib.REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args)
    cpu.append(usage.ru_utime + usage.ru_stime)
    return wall


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    started = benchlib.machine()
    # quick (a smoke run in `make test`): 3 rounds of `sriovop --help` and the container entry points;
    # that every subcommand's --help imports nothing heavy is a unit test (test_cli_lazy_start.py)
    rounds = 3 if args.quick else args.rounds
    cpu: dict[str, list[float]] = {"python -c pass": []}
    sides = {"python -c pass": lambda: run([sys.executable, "-c", "pass"], cpu["python -c pass"])}
    for cmd in ([[], ["operator"], ["config-daemon"], ["webhook"]] if args.quick else commands()):
        argv = [sys.executable, "-m", "sriovop.cli", *cmd, "--help"]
        name = " ".join(["sriovop", *cmd, "--help"])
        cpu[name] = []
        sides[name] = lambda argv=argv, into=cpu[name]: run(argv, into)
    samples = benchlib.interleave(sides, rounds)
    floor = Stat.of(samples.pop("python -c pass"))
    cpu = {name: s[-rounds:] for name, s in cpu.items()}  # without the warm-up round
    cpu_floor = Stat.of(cpu.pop("python -c pass"))
    details = {"rounds": rounds, "floor_ms": floor.scaled(1000, 1),
               "commands_ms": {name: Stat.of(s).scaled(1000, 1) for name, s in samples.items()},
               "floor_cpu_ms": cpu_floor.scaled(1000, 1),
               "commands_cpu_ms": {name: Stat.of(s).scaled(1000, 1) for name, s in cpu.items()}}
    worst_cpu_name, worst_cpu = max(((n, Stat.of(s).median) for n, s in cpu.items()), key=lambda x: x[1])
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
        Figure("cli_start_cpu_ms_over_python_floor", round(worst_cpu * 1000, 1), "ms",
               baseline=round(cpu_floor.median * 1000, 1),
               baseline_what="CPU time of python -c pass (same venv, interleaved)",
               target=round(3 * cpu_floor.median * 1000 + 150, 1), target_what="3 x floor + 150 ms",
               note=f"most CPU: {worst_cpu_name} (median of {rounds}); CPU time is what the imports cost, "
                    "whatever the machine's load"),
    ]
    benchlib.emit("cli_start", figures, details, args.out, started)


if __name__ == "__main__":
    main()
