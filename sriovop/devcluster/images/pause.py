"""The pod sandbox ("pause") image, built here because no registry can serve registry.k8s.io/pause.

containerd's CRI plugin starts every pod with its sandbox image, so a development cluster's nodes need
one before the first pod. The binary is the small static Go program in hack/pause (the same contract
as upstream's: hold the namespaces, reap zombies, exit on SIGINT/SIGTERM), built with CGO_ENABLED=0
and put alone in a one-layer image under the name the nodes' containerd config asks for.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import structlog

from sriovop.devcluster.images.cache import cache_root, content_key, locked
from sriovop.devcluster.images.gobuild import go_build, go_sources, hack_dir
from sriovop.devcluster.images.oci import ImageConfig, write_image, write_layer

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
# Upstream's pause image runs as 65535 with /pause as its entrypoint; the kubelet relies on neither,
# but matching them keeps `crictl inspecti` output familiar.
PAUSE_CONFIG = ImageConfig(entrypoint=("/pause",), user="65535:65535", working_dir="/")

log = structlog.get_logger("devcluster.images")


def pause_source_dir() -> Path:
    """hack/pause of the checkout this package runs from (the image is a development-cluster tool)."""
    return hack_dir("pause")


def ensure_pause_archive(src: Path | None = None) -> Path:
    """Return an OCI archive of PAUSE_IMAGE, building it once per source version (cached, locked).

    Cold: one `go build` (seconds to a minute on a loaded machine, progress is logged); warm: a stat.
    """
    src = src or pause_source_dir()
    key = content_key(PAUSE_IMAGE, files=go_sources(src))
    root = cache_root()
    archive = root / f"pause-3.10-{key}.tar"
    if archive.is_file():
        return archive
    with locked(root / ".pause.lock"):
        if archive.is_file():
            return archive
        log.info("building the pause image", image=PAUSE_IMAGE, source=str(src), step="go build")
        with tempfile.TemporaryDirectory(prefix="sriovop-pause-") as tmp:
            rootfs = Path(tmp) / "rootfs"
            rootfs.mkdir(mode=0o755)
            go_build(src, rootfs / "pause")
            layer = write_layer(rootfs, Path(tmp) / "layer.tar.gz", owner=(0, 0))
            write_image(archive, PAUSE_IMAGE, [layer], PAUSE_CONFIG)
        log.info("pause image ready", archive=str(archive))
    return archive
