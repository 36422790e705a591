"""Stop signals never deadlock a binary that is logging (no host: a plain subprocess).

A kubelet (or the QEMU guest's init) signals the process group and then the process, so a binary gets
SIGTERM two or three times in a row while its main thread may be writing a log line under the logger's
lock. A handler that logs or sets an Event itself can then wait forever on a lock its own thread holds;
the process ends only by SIGKILL after the grace period (exit 137). These tests signal a busy-logging
child many times and require a clean exit 0 with exactly one "stopping" line.

Scripts that clean up in `finally` blocks (the rollout benchmark's fleets) unwind on the first signal;
a second one must not cut that clean-up short.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import sys
from sriovop.logsetup import configure_logging
from sriovop.stopsignals import stop_on_signals
import structlog

configure_logging("debug", "console")
stopped = []
stop = stop_on_signals("busy child", on_stop=lambda signum: stopped.append(signum))
log = structlog.get_logger("busy")
print("READY", flush=True)
if sys.argv[1] == "log":  # the main thread logs non-stop: signals land while it holds the logger's lock
    n = 0
    while not stop.is_set():
        log.info("tick", n=n)
        n += 1
else:  # the main thread waits on the event, as the binaries do: signals land inside Event.set/wait
    stop.wait()
assert stopped and stopped[0] in (15, 2), stopped
print("CLEAN-EXIT", flush=True)
sys.exit(0)
"""


def _start(mode: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    return proc


@pytest.mark.parametrize("mode", ["log", "wait"])
def test_a_burst_of_stop_signals_ends_the_process_cleanly(mode: str) -> None:
    proc = _start(mode)
    # SIGTERM and SIGINT alternate so the kernel does not merge them into one pending signal: each can
    # land while the previous one is being handled.
    # The signals go on until the child has exited, so some land while the interpreter tears itself down.
    i = 0
    while proc.poll() is None and i < 200_000:
        try:
            os.kill(proc.pid, signal.SIGTERM if i % 2 == 0 else signal.SIGINT)
        except ProcessLookupError:
            break
        i += 1
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the child did not stop within 60 s of the signals (deadlocked in a signal handler?)\n"
                    + err[-2000:])
    # The child reached its clean exit, and a signal that landed while the interpreter tore itself down
    # did not end it with that signal (exit 143 after a clean stop, which an init or kubelet reports).
    assert "CLEAN-EXIT" in out, err[-2000:]
    assert proc.returncode == 0, (proc.returncode, err[-2000:])
    assert err.count("busy child stopping") == 1, err[-2000:]


FORKING_CHILD = r"""
import os, signal, sys, time
from sriovop.stopsignals import stop_on_signals

stop = stop_on_signals("forking child")
pid = os.fork()  # as pyroute2 does to open a socket in another network namespace: no exec
if pid == 0:
    time.sleep(30)
    os._exit(0)
os.kill(pid, signal.SIGTERM)  # the forked child inherited our handlers: its SIGTERM is not ours
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status), flush=True)
print("STOPPED" if stop.wait(2.0) else "RUNNING", flush=True)
"""


def test_a_stop_signal_to_a_forked_child_does_not_stop_the_parent() -> None:
    done = subprocess.run([sys.executable, "-c", FORKING_CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # The child, signalled the moment it exists, ends by the default action; the parent keeps running.
    assert done.stdout.split() == ["child", str(-signal.SIGTERM), "RUNNING"], done.stdout + done.stderr


UNWINDING_CHILD = r"""
import sys, time
from pathlib import Path
from sriovop.stopsignals import unwind_on_signals

unwind_on_signals("unwinding child")
try:
    print("READY", flush=True)
    while True:
        time.sleep(0.05)
finally:  # the clean-up: it waits for the test, which signals the child again meanwhile
    print("CLEANING", flush=True)
    while not Path(sys.argv[1]).exists():
        time.sleep(0.05)
    print("CLEANED", flush=True)
"""


@pytest.mark.parametrize(("first", "exit_code"), [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 143)])
def test_a_script_unwinds_once_and_later_signals_do_not_cut_its_clean_up_short(
        tmp_path: Path, first: signal.Signals, exit_code: int) -> None:
    go = tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", UNWINDING_CHILD, str(go)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "READY"
        os.kill(proc.pid, first)
        assert proc.stdout.readline().strip() == "CLEANING"
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):  # a second Ctrl-C, a timeout's forward
            os.kill(proc.pid, signum)
        go.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert out.split() == ["CLEANED"], out + err
    assert proc.returncode == exit_code, (proc.returncode, err[-2000:])
    assert err.count("cleaning up (further stop signals are ignored)") == 1, err[-2000:]
    assert f"unwinding child: {first.name}" in err, err[-2000:]
