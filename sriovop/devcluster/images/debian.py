"""The images' bottom layer: a minimal Debian root filesystem made by mmdebstrap from the machine's APT sources.

`--variant=essential` plus the requested packages gives a system without apt or docs (dpkg excludes
man pages, docs but copyrights, locales and info pages). It is the slowest step (tens of seconds per
package set), so each package set's layer is cached by a key over the suite, sources, options and
packages; the images' Python layers go on top of it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from sriovop.devcluster.images.apt_sources import debian_sources
from sriovop.devcluster.images.cache import cached_layer, content_key
from sriovop.devcluster.images.oci import Layer
from sriovop.devcluster.images.spec import DEBIAN_SUITE

DPKG_OPTIONS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)


class DebianBuildError(RuntimeError):
    """mmdebstrap is missing or failed; the message carries its last output lines."""


def mmdebstrap_command(packages: Sequence[str], target: Path) -> list[str]:
    cmd = ["mmdebstrap", "--variant=essential", f"--include={','.join(sorted(packages))}"]
    cmd += [f"--dpkgopt={opt}" for opt in DPKG_OPTIONS]
    return [*cmd, DEBIAN_SUITE, str(target), *debian_sources(DEBIAN_SUITE)]


def _run_mmdebstrap(packages: Sequence[str], rootfs: Path, say: Callable[[str], None]) -> None:
    if shutil.which("mmdebstrap") is None:
        raise DebianBuildError("mmdebstrap is not on PATH: run `make deps` (hack/install-deps.sh installs it)")
    rootfs.rmdir()  # mmdebstrap wants to create (or find empty) its target; start clean
    cmd = mmdebstrap_command(packages, rootfs)
    tail: list[str] = []
    with subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip()
            tail = [*tail[-19:], line]
            if line.startswith(("I: ", "E: ", "W: ")):
                say(f"  mmdebstrap: {line[3:]}")
    if proc.returncode != 0:
        raise DebianBuildError(f"mmdebstrap failed ({proc.returncode}) for {', '.join(packages)}:\n"
                               + "\n".join(tail))
    # The runtime provides /dev; device nodes in a layer would need privileges to unpack.
    for entry in (rootfs / "dev").iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def debian_layer(packages: Sequence[str], say: Callable[[str], None]) -> Layer:
    """The cached root filesystem layer with `packages` installed (built by mmdebstrap when missing)."""
    key = content_key(*mmdebstrap_command(packages, Path("/")))
    name = f"debian-{DEBIAN_SUITE}-{key}"

    def build(rootfs: Path) -> None:
        say(f"mmdebstrap {DEBIAN_SUITE} with {' '.join(sorted(packages))} (cached afterwards as {name})")
        _run_mmdebstrap(packages, rootfs, say)
        say("packing the Debian root filesystem layer")

    return cached_layer(name, build)
