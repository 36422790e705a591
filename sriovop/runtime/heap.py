"""The C heap of a long-running process: give freed memory back, and keep threads from spreading it.

Both are glibc's (malloc_trim, mallopt) and no-ops elsewhere. This module imports nothing but the
standard library, so a command may call it first, before anything that starts threads, and the
config daemon's systemd-mode service, which runs on the host without the client libraries, can too.

- `release_free_memory()`: `malloc_trim(0)` releases the free pages of every arena (after a big LIST
  and after bursts of watch events; sriovop.runtime.cache.trim decides when).
- `limit_malloc_arenas()` caps the arenas themselves (M_ARENA_MAX). Unlimited, glibc gives up to 8
  arenas per core, a new one to each thread that allocates until then, and memory freed in a thread's
  arena stays there even after a trim: the policy controller's process grew by 43.4 MiB to hold 5,000
  Nodes and NodeStates with the default, by 34.4 MiB with 2 arenas and 33.5 MiB with 1. Threads run
  Python code one at a time (the GIL), so they rarely contend for an arena. Long-running commands call
  it first, before they start threads; a MALLOC_ARENA_MAX set in the environment is left to glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

#: The arenas `limit_malloc_arenas` allows (see the module docstring).
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number in glibc's malloc.h

_lock = threading.Lock()
_libc: ctypes.CDLL | None = None
_loaded = False


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has malloc_trim and mallopt), else None."""
    global _libc, _loaded
    with _lock:
        if not _loaded:
            _loaded = True
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _libc = libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
            except OSError:
                _libc = None
        return _libc


def release_free_memory() -> bool:
    """Give the free pages of every arena back to the OS; whether glibc did."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def limit_malloc_arenas(count: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's arenas at `count` (see the module docstring); whether the cap was set here."""
    libc = _glibc()
    if libc is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, count))
