"""Where built images and their layers are kept between runs, and the lock that guards a build.

Builds are cached by a key over their inputs, so a second `make images` or `cluster up` reuses them;
the lock lets two processes (a test and a `cluster up`) ask for the same image at once safely.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sriovop.devcluster.images.oci import Layer, write_layer


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


def cached_layer(name: str, build: Callable[[Path], None], owner: tuple[int, int] | None = None,
                 root: Path | None = None) -> Layer:
    """The layer `name` from the cache, or `build(rootfs_dir)` it, pack it and cache it.

    `name` must carry the content key of everything the layer is made from. The layer's digests are
    kept in a JSON file beside the blob so a warm build reads them instead of re-hashing the blob.
    `owner` forces one uid/gid on every entry (see write_layer).
    """
    layers = (root or cache_root()) / "layers"
    blob = layers / f"{name}.tar.gz"
    meta = layers / f"{name}.json"
    found = _read_layer(blob, meta)
    if found is not None:
        return found
    with locked(layers / f".{name}.lock"):
        found = _read_layer(blob, meta)
        if found is not None:
            return found
        with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=layers) as tmp:
            rootfs = Path(tmp) / "rootfs"
            rootfs.mkdir(mode=0o755)
            build(rootfs)
            layer = write_layer(rootfs, blob, owner=owner)
        meta.write_text(json.dumps({"digest": layer.digest, "diff_id": layer.diff_id, "size": layer.size}))
        return layer


def _read_layer(blob: Path, meta: Path) -> Layer | None:
    try:
        data = json.loads(meta.read_text())
        layer = Layer(path=blob, digest=data["digest"], diff_id=data["diff_id"], size=int(data["size"]))
    except (FileNotFoundError, ValueError, KeyError):
        return None
    if not blob.is_file() or blob.stat().st_size != layer.size:
        return None
    os.utime(meta)  # last use, for prune_layers
    return layer


def prune_layers(prefix: str, keep: int, root: Path | None = None) -> list[str]:
    """Delete all but the `keep` most recently used layers named `prefix*`; return the names removed.

    Every code change leaves a new wheel layer behind; without this the cache grows by one per edit.
    A layer a build still needs is simply rebuilt (cached_layer checks the blob before using it).
    """
    layers = (root or cache_root()) / "layers"
    metas = sorted(layers.glob(f"{prefix}*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    removed = []
    for meta in metas[keep:]:
        name = meta.name.removesuffix(".json")
        for path in (meta, layers / f"{name}.tar.gz", layers / f".{name}.lock"):
            path.unlink(missing_ok=True)
        removed.append(name)
    return removed
