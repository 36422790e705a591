"""Stand-in images for the upstream components that cannot be built here, under their exact names.

The operator renders sriov-cni and ib-sriov-cni as init containers of the config daemon; the Go module
proxy refuses both, and no registry can be reached. (The device plugin is our own image, spec.py.)
So that `kubectl apply -k manifests/` works unchanged on the development cluster, `make images` builds
one tiny static program (hack/standin) into an image per name: the CNI images install it as their
plugin (it answers VERSION and fails every other CNI command saying it is a stand-in, so a pod on
such a network fails loudly rather than silently). Only `make images` builds them and
only a development cluster loads them; users pull upstream's real images.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sriovop.devcluster.images.cache import cached_layer, content_key
from sriovop.devcluster.images.gobuild import cached_binary, hack_dir
from sriovop.devcluster.images.oci import ImageConfig, Layer

BINARY = "/standin"


@dataclass(frozen=True)
class StandIn:
    """One stand-in image: `env` is the operator's image variable whose value `name` must equal."""

    target: str
    name: str
    env: str
    entrypoint: tuple[str, ...]

    def config(self) -> ImageConfig:
        return ImageConfig(entrypoint=self.entrypoint, user="0:0", working_dir="/",
                           labels=(("org.opencontainers.image.title", f"{self.target} (development stand-in)"),))


STANDINS: tuple[StandIn, ...] = (
    StandIn(target="standin-sriov-cni", name="ghcr.io/k8snetworkplumbingwg/sriov-cni:v2.9.0",
            env="SRIOV_CNI_IMAGE", entrypoint=(BINARY, "install", "sriov")),
    StandIn(target="standin-ib-sriov-cni", name="ghcr.io/k8snetworkplumbingwg/ib-sriov-cni:v1.2.1",
            env="SRIOV_INFINIBAND_CNI_IMAGE", entrypoint=(BINARY, "install", "ib-sriov")),
)


def standin_layer(say: Callable[[str], None]) -> Layer:
    """The one layer every stand-in shares: the static binary at /standin."""
    src = hack_dir("standin")
    binary = cached_binary(src)

    def build(rootfs: Path) -> None:
        say("building the stand-in layer (hack/standin)")
        shutil.copyfile(binary, rootfs / BINARY.lstrip("/"))
        (rootfs / BINARY.lstrip("/")).chmod(0o755)

    return cached_layer(f"standin-{content_key(binary.name)}", build, owner=(0, 0))
