"""Static Go programs from hack/ (the pause and stand-in binaries), built once per source version.

The development cluster needs a few tiny binaries that no registry can serve here. Each is a
dependency-free Go program built with CGO_ENABLED=0 and the local toolchain, cached under the images
cache by the hash of its sources, so a warm build is a stat.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sriovop.devcluster.checkout import source_root
from sriovop.devcluster.images.cache import cache_root, content_key, locked


class GoBuildError(RuntimeError):
    """A program under hack/ could not be built; the message says what is missing."""


def hack_dir(name: str) -> Path:
    """hack/NAME of the checkout this package runs from (these are development-cluster tools)."""
    return source_root() / "hack" / name


def go_sources(src: Path) -> list[Path]:
    if not (src / "main.go").is_file():
        raise GoBuildError(f"{src / 'main.go'} is missing: this image is built from a sriovop source checkout")
    return sorted(p for p in src.iterdir() if p.suffix == ".go" or p.name == "go.mod")


def go_build(src: Path, out: Path) -> None:
    go = shutil.which("go")
    if go is None:
        raise GoBuildError(f"go is not on PATH: it builds {src.name} (see hack/install-deps.sh)")
    env = dict(os.environ, CGO_ENABLED="0", GOWORK="off", GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    cmd = [go, "build", "-trimpath", "-ldflags", "-s -w -buildid=", "-o", str(out), "."]
    proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise GoBuildError(f"go build of {src} failed ({proc.returncode}): {proc.stderr.strip()}")
    out.chmod(0o755)


def cached_binary(src: Path) -> Path:
    """The binary of hack/<src>, built at most once per source version (locked against parallel builds)."""
    root = cache_root()
    binary = root / "bin" / f"{src.name}-{content_key(src.name, files=go_sources(src))}"
    if binary.is_file():
        return binary
    with locked(root / f".{src.name}.lock"):
        if not binary.is_file():
            binary.parent.mkdir(parents=True, exist_ok=True)
            tmp = binary.with_name(binary.name + ".part")
            go_build(src, tmp)
            os.replace(tmp, binary)
    return binary
