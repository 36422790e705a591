"""Where built images and their layers are kept between runs, and the lock that guards a build.

Builds are cached by a key over their inputs, so a second `make images` or `cluster up` reuses them;
the lock lets two processes (a test and a `cluster up`) ask for the same image at once safely.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/sriovop/images (created on first use)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sriovop" / "images"


def content_key(*parts: bytes | str | Path, files: Iterable[Path] = ()) -> str:
    """A short hex key over strings, bytes and file contents (in the order given)."""
    sha = hashlib.sha256()
    for part in (*parts, *files):
        if isinstance(part, Path):
            sha.update(part.name.encode() + b"\0" + part.read_bytes())
        else:
            sha.update(part.encode() if isinstance(part, str) else part)
        sha.update(b"\0\0")
    return sha.hexdigest()[:16]


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing) for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
