"""The static CNI shim (images/cni-shim) as a file the dev cluster can put in a node's CNI bin dir.

It is built with the Go toolchain on first use and cached by the hash of its sources
($XDG_CACHE_HOME/sriovop/cni-shim/<hash>/cni-shim), so a changed shim is rebuilt and an unchanged one
costs nothing. The build writes a temporary file and renames it, so concurrent `up`s never see half a
binary. SRIOVOP_CNI_SHIM names a prebuilt shim instead (a machine without the Go toolchain).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from sriovop.devcluster.checkout import source_root

BUILD_TIMEOUT_S = 900.0


def _source_hash(source: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".go", ".mod", ".sum")):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sriovop" / "cni-shim"


def shim_binary(source: Path | None = None) -> Path:
    """The built shim (from `source`, default the checkout's images/cni-shim); FileNotFoundError naming
    what is missing when there is no source or no Go."""
    explicit = os.environ.get("SRIOVOP_CNI_SHIM")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise FileNotFoundError(f"SRIOVOP_CNI_SHIM={explicit} is not an executable file")
        return Path(explicit)
    source = source or source_root() / "images" / "cni-shim"
    if not (source / "main.go").is_file():
        raise FileNotFoundError(f"the CNI shim's source is not at {source} (a sriovop checkout is needed)")
    target = cache_root() / _source_hash(source) / "cni-shim"
    if os.access(target, os.X_OK):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"cni-shim.{os.getpid()}.tmp")
    env = dict(os.environ, CGO_ENABLED="0", GOWORK="off", GOFLAGS="-mod=mod")
    try:
        subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp), "."], cwd=source, env=env,
                       check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
    except FileNotFoundError:
        raise FileNotFoundError("building the CNI shim needs the Go toolchain (`go` on PATH)") from None
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"building the CNI shim failed:\n{exc.stderr.decode(errors='replace')}") from None
    os.replace(tmp, target)
    return target
