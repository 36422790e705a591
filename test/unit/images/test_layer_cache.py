"""The layer cache: a layer is built once per name, reused after, and the least recently used are pruned.
No host is touched (a cache directory under tmp_path)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from sriovop.devcluster.images.cache import cached_layer, prune_layers


def _builder(calls: list[Path], text: str = "x") -> Callable[[Path], None]:
    def build(rootfs: Path) -> None:
        calls.append(rootfs)
        (rootfs / "f").write_text(text)
    return build


def test_a_layer_is_built_once_and_then_read_from_the_cache(tmp_path: Path) -> None:
    calls: list[Path] = []
    first = cached_layer("app-1", _builder(calls), root=tmp_path)
    second = cached_layer("app-1", _builder(calls), root=tmp_path)
    assert len(calls) == 1 and first == second and first.path.is_file()
    first.path.write_bytes(b"truncated")  # a damaged blob is rebuilt, not used
    third = cached_layer("app-1", _builder(calls), root=tmp_path)
    assert len(calls) == 2 and third.digest == first.digest


def test_prune_keeps_the_newest_layers_of_a_prefix_only(tmp_path: Path) -> None:
    for i in range(5):
        layer = cached_layer(f"app-{i}", _builder([], text=str(i)), root=tmp_path)
        stamp = 1_000_000 + i
        os.utime(layer.path.with_name(f"app-{i}.json"), (stamp, stamp))
    cached_layer("deps-1", _builder([]), root=tmp_path)
    cached_layer("app-0", _builder([]), root=tmp_path)  # a cache hit makes app-0 the most recently used
    assert sorted(prune_layers("app-", keep=2, root=tmp_path)) == ["app-1", "app-2", "app-3"]
    left = sorted(p.name for p in (tmp_path / "layers").iterdir() if not p.name.startswith("."))
    assert left == ["app-0.json", "app-0.tar.gz", "app-4.json", "app-4.tar.gz", "deps-1.json", "deps-1.tar.gz"]
