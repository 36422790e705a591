"""A socket in another network namespace, kept for the life of a CNI server worker thread.

Opening the namespace and making a socket there costs a few system calls (and, for pyroute2, its
construction and event loop) on every request; a worker keeps both per namespace path. Elsewhere (a
test calling a handler directly) they are closed after use, so no namespace is kept alive.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sriovop.cni.server import worker_cache

T = TypeVar("T")


@contextmanager
def kept_per_worker(kind: str, path: str, make: Callable[[int], T],
                    close: Callable[[T], None]) -> Iterator[tuple[T, int]]:
    """`make(fd)` for the namespace at `path` and that open descriptor; `kind` tells socket types apart."""
    cache = worker_cache()
    key = (kind, path)
    if cache is not None and key in cache:
        cached: tuple[T, int] = cache[key]  # type: ignore[assignment]
        yield cached
        return
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        sock = make(fd)
    except BaseException:
        os.close(fd)
        raise
    if cache is not None:
        cache[key] = (sock, fd)
        yield sock, fd
        return
    try:
        yield sock, fd
    finally:
        close(sock)
        os.close(fd)
