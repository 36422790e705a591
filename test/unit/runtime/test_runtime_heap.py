"""glibc's heap calls (sriovop.runtime.heap): malloc_trim in this process, the arena cap in a child
interpreter whose threads allocate at once. No host is touched."""

from __future__ import annotations

import os
import subprocess
import sys

from sriovop.runtime.heap import release_free_memory


def test_release_free_memory_calls_glibc() -> None:
    assert release_free_memory() is True  # glibc (Debian): malloc_trim exists


#: A child that caps the arenas (or not), lets 8 threads allocate at once and counts glibc's arenas
#: (`<heap nr=...>` entries in malloc_info's report).
ARENAS_CHILD = """
import ctypes, os, sys, tempfile, threading
from sriovop.runtime.heap import limit_malloc_arenas
capped = limit_malloc_arenas(int(sys.argv[1])) if sys.argv[1] != "none" else None
start = threading.Barrier(8)
def work():
    start.wait()
    blocks = [bytearray(4096) for _ in range(2000)]  # malloc'd by glibc (over pymalloc's 512 bytes)
    del blocks
threads = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fclose.argtypes = [ctypes.c_void_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
path = tempfile.mktemp()
f = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, f)
libc.fclose(f)
report = open(path).read()
os.unlink(path)
print(capped, report.count("<heap nr="))
"""


def _arenas(cap: str, arena_max_env: str | None = None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    if arena_max_env is not None:
        env["MALLOC_ARENA_MAX"] = arena_max_env
    done = subprocess.run([sys.executable, "-c", ARENAS_CHILD, cap], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    capped, count = done.stdout.split()
    return capped, int(count)


def test_the_arena_cap_holds_threads_to_two_arenas() -> None:
    assert _arenas("none")[1] > 2  # the premise: glibc gives the threads arenas of their own
    assert _arenas("2") == ("True", 2)


def test_a_malloc_arena_max_from_the_environment_is_left_to_glibc() -> None:
    capped, count = _arenas("2", arena_max_env="1")
    assert capped == "False" and count == 1
