"""The images' Python layers: the pinned dependencies, then the sriovop wheel on top.

Two layers so that a code change rebuilds only the small wheel layer. Both are installed with this
machine's pip into Debian python3's own site directory (no venv, no pip inside the image), choosing
wheels for the image's Python and glibc rather than the host's, and byte-compiled with unchecked-hash
pycs: deterministic, and the operator's read-only root filesystem never needs to write a cache.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from sriovop.devcluster.images.cache import cached_layer, content_key, prune_layers
from sriovop.devcluster.images.oci import Layer
from sriovop.devcluster.images.spec import DEBIAN_GLIBC, PYTHON_VERSION, SITE_PACKAGES

LAUNCHER = """#!/usr/bin/python3
# The `sriovop` console script (what pip writes for the wheel's entry point, for Debian's python3).
import sys

from sriovop.cli import main

if __name__ == "__main__":
    sys.exit(main())
"""
# Wheel layers of recent source versions kept in the cache (switching branches back and forth stays warm).
APP_LAYERS_KEPT = 10
_SOURCE_SUFFIXES = {".py", ".typed", ".yaml", ".json", ".j2"}


class PythonLayerError(RuntimeError):
    """pip failed; the message carries its output."""


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr)[-4000:]
        raise PythonLayerError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output}")


def wheel_platforms() -> list[str]:
    """Every manylinux tag that runs on the image's glibc, newest first (pip does not expand them)."""
    arch = platform.machine()
    major, newest = DEBIAN_GLIBC
    tags = [f"manylinux_{major}_{minor}_{arch}" for minor in range(newest, 4, -1)]
    return [*tags, f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]


def _target_args(site: Path) -> list[str]:
    abi = "cp" + PYTHON_VERSION.replace(".", "")
    args = ["install", "--quiet", "--no-deps", "--no-compile", "--only-binary=:all:", "--target", str(site),
            "--python-version", PYTHON_VERSION, "--implementation", "cp", "--abi", abi]
    for tag in wheel_platforms():
        args += ["--platform", tag]
    return args


def _compile(site: Path) -> None:
    """unchecked-hash pycs, only when this interpreter's bytecode is the image's (same minor version)."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" != PYTHON_VERSION:
        return
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
                    "-d", SITE_PACKAGES, str(site)], check=True, stdout=subprocess.DEVNULL)


def _site(rootfs: Path) -> Path:
    site = rootfs / SITE_PACKAGES.lstrip("/")
    site.mkdir(parents=True)
    return site


def deps_layer(requirements: Path, say: Callable[[str], None]) -> Layer:
    """The pinned runtime dependencies (images/requirements.txt), cached by the file's content."""
    key = content_key(PYTHON_VERSION, *wheel_platforms(), files=[requirements])

    def build(rootfs: Path) -> None:
        say(f"pip: installing {requirements.name} wheels for Python {PYTHON_VERSION} (cached afterwards)")
        site = _site(rootfs)
        _pip(*_target_args(site), "-r", str(requirements))
        shutil.rmtree(site / "bin", ignore_errors=True)  # scripts with this machine's interpreter path
        say("byte-compiling the dependencies")
        _compile(site)
        say("packing the dependencies layer")

    return cached_layer(f"deps-py{PYTHON_VERSION}-{key}", build, owner=(0, 0))


def source_files(repo: Path) -> list[Path]:
    """What the sriovop wheel is built from: the package's sources and data plus the build metadata."""
    package = sorted(p for p in (repo / "sriovop").rglob("*")
                     if p.is_file() and p.suffix in _SOURCE_SUFFIXES and "__pycache__" not in p.parts)
    return [*(repo / n for n in ("setup.cfg", "pyproject.toml", "README.md")), *package]


def app_layer(repo: Path, say: Callable[[str], None]) -> Layer:
    """The sriovop wheel built from `repo` and installed with a `sriovop` launcher, cached by source content."""
    files = source_files(repo)
    key = content_key(PYTHON_VERSION, LAUNCHER, *(str(p.relative_to(repo)) for p in files), files=files)

    def build(rootfs: Path) -> None:
        say("building the sriovop wheel and its layer (the code changed)")
        with tempfile.TemporaryDirectory(prefix="sriovop-wheel-") as tmp:
            # Build from a copy of exactly the keyed files: an in-tree build/ directory can carry
            # modules deleted since, and setuptools would package them.
            src, wheels = Path(tmp) / "src", Path(tmp) / "wheels"
            for path in files:
                (src / path.relative_to(repo)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, src / path.relative_to(repo))
            _pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(src))
            [wheel] = wheels.glob("sriovop-*.whl")
            site = _site(rootfs)
            _pip(*_target_args(site), str(wheel))
        shutil.rmtree(site / "bin", ignore_errors=True)
        _compile(site)
        launcher = rootfs / "usr" / "local" / "bin" / "sriovop"
        launcher.parent.mkdir(parents=True)
        launcher.write_text(LAUNCHER)
        launcher.chmod(0o755)

    layer = cached_layer(f"app-{key}", build, owner=(0, 0))
    prune_layers("app-", keep=APP_LAYERS_KEPT)
    return layer
