"""`make images`: the operator, webhook, config-daemon and device-plugin images, the CNI shim images and
the pause image as OCI archives.

Each app image is three layers: a Debian root filesystem (mmdebstrap, cached per package set), the
pinned dependencies (cached per images/requirements.txt) and the sriovop wheel (rebuilt only when the
code changes). An archive is rewritten only when its index digest (name, config and every layer)
changed, so a warm `make images` reads a few small files and writes nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from sriovop.devcluster.checkout import source_root
from sriovop.devcluster.images.cni import CNI_IMAGES, CniImage, cni_layer
from sriovop.devcluster.images.debian import debian_layer
from sriovop.devcluster.images.oci import ImageConfig, Layer, plan_image
from sriovop.devcluster.images.pause import PAUSE_IMAGE, ensure_pause_archive
from sriovop.devcluster.images.python_layers import app_layer, deps_layer
from sriovop.devcluster.images.spec import ENV, IMAGES, ImageSpec, by_target

PAUSE_TARGET = "pause"


def default_out_dir() -> Path:
    return source_root() / "build" / "images"


class Progress:
    """`[images   12s] step` lines on stderr, so the slow cold steps show what they are doing."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.started = time.monotonic()
        self.stream = stream or sys.stderr

    def __call__(self, message: str) -> None:
        print(f"[images {time.monotonic() - self.started:5.0f}s] {message}", file=self.stream, flush=True)


def image_config(spec: ImageSpec) -> ImageConfig:
    return ImageConfig(entrypoint=spec.entrypoint, cmd=spec.cmd, user=spec.user, env=ENV, working_dir="/",
                       labels=(("org.opencontainers.image.title", spec.target),))


def _write_if_changed(out: Path, name: str, layers: Sequence[Layer], config: ImageConfig,
                      say: Callable[[str], None]) -> bool:
    plan = plan_image(name, layers, config)
    stamp = out.with_name(f".{out.name}.index-digest")
    if out.is_file() and stamp.is_file() and stamp.read_text() == plan.index_digest:
        return False
    say(f"writing {out.name} ({name})")
    plan.write(out)
    stamp.write_text(plan.index_digest)
    return True


def _copy_pause(out_dir: Path, say: Callable[[str], None]) -> Path:
    source = ensure_pause_archive()
    out = out_dir / f"{PAUSE_TARGET}.tar"
    if out.is_file() and out.stat().st_size == source.stat().st_size and out.read_bytes() == source.read_bytes():
        return out
    say(f"writing {out.name} ({PAUSE_IMAGE})")
    tmp = out.with_name(out.name + ".part")
    shutil.copyfile(source, tmp)
    os.replace(tmp, out)
    return out


def build_images(out_dir: Path | None = None, targets: Sequence[str] = (),
                 say: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Build (or reuse) the archives of `targets` (default: every image and pause); return target -> path."""
    say = say or Progress()
    out_dir = out_dir or default_out_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    cni = {c.target: c for c in CNI_IMAGES}
    wanted = list(targets) or [*(s.target for s in IMAGES), *cni, PAUSE_TARGET]
    specs = [by_target(t) for t in wanted if t != PAUSE_TARGET and t not in cni]
    built: dict[str, Path] = {}
    repo = source_root()  # images are built from its sources
    if specs:
        deps = deps_layer(repo / "images" / "requirements.txt", say)
        app = app_layer(repo, say)
        for spec in specs:
            base = debian_layer(spec.debian_packages, say)
            out = out_dir / f"{spec.target}.tar"
            _write_if_changed(out, spec.name, [base, deps, app], image_config(spec), say)
            built[spec.target] = out
    if wanted_cni := [cni[t] for t in wanted if t in cni]:
        built |= _single_layer_images(out_dir, wanted_cni, cni_layer(say), say)
    if PAUSE_TARGET in wanted:
        built[PAUSE_TARGET] = _copy_pause(out_dir, say)
    return built


def _single_layer_images(out_dir: Path, images: Sequence[CniImage], layer: Layer,
                         say: Callable[[str], None]) -> dict[str, Path]:
    """Images made of one shared static-binary layer (the CNI shim images)."""
    built: dict[str, Path] = {}
    for image in images:
        out = out_dir / f"{image.target}.tar"
        _write_if_changed(out, image.name, [layer], image.config(), say)
        built[image.target] = out
    return built
