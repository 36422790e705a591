"""sriovop's CNI images: the static shim (images/cni-shim) and nothing else, one image per plugin.

The operator renders one init container per CNI image (SRIOV_CNI_IMAGE, SRIOV_INFINIBAND_CNI_IMAGE);
each runs the image's entrypoint, `/cni-shim install <plugin>`, which copies the shim to the host's
/opt/cni/bin/<plugin> (temp file + rename), as upstream's images do. Two images rather than one, so
that pointing one variable at upstream's image never has ours overwrite upstream's plugin. They share
their only layer. The plugins' logic runs in the config daemon's `sriov-cni-server` container.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sriovop.devcluster.images.cache import cached_layer, content_key
from sriovop.devcluster.images.cni_shim import shim_binary
from sriovop.devcluster.images.oci import ImageConfig, Layer
from sriovop.devcluster.images.spec import TAG

SHIM = "/cni-shim"


@dataclass(frozen=True)
class CniImage:
    """`env` is the operator's image variable that names this image; `plugin` what it installs."""

    target: str
    name: str
    env: str
    plugin: str

    @property
    def entrypoint(self) -> tuple[str, ...]:
        return (SHIM, "install", self.plugin)

    def config(self) -> ImageConfig:
        return ImageConfig(entrypoint=self.entrypoint, user="0:0", working_dir="/",
                           labels=(("org.opencontainers.image.title", self.target),))


CNI_IMAGES: tuple[CniImage, ...] = (
    CniImage(target="sriov-cni", name=f"ghcr.io/sriovop/sriovop-cni:{TAG}", env="SRIOV_CNI_IMAGE",
             plugin="sriov"),
    CniImage(target="ib-sriov-cni", name=f"ghcr.io/sriovop/sriovop-ib-sriov-cni:{TAG}",
             env="SRIOV_INFINIBAND_CNI_IMAGE", plugin="ib-sriov"),
)


def cni_layer(say: Callable[[str], None]) -> Layer:
    """The one layer both CNI images share: the static shim at /cni-shim."""
    binary = shim_binary()

    def build(rootfs: Path) -> None:
        say("building the CNI shim layer (images/cni-shim)")
        shutil.copyfile(binary, rootfs / SHIM.lstrip("/"))
        (rootfs / SHIM.lstrip("/")).chmod(0o755)

    return cached_layer(f"cni-shim-{content_key(binary.name)}", build, owner=(0, 0))
