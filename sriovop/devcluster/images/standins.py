"""Stand-in images for the upstream components that cannot be built here, under their exact names.

The operator renders the SR-IOV device plugin as a DaemonSet; the Go module proxy refuses it, and no
registry can be reached. So that `kubectl apply -k manifests/` works unchanged on the development
cluster, `make images` builds one tiny static program (hack/standin) into an image under that name: it
only sleeps (its `wait-for-config` init container is our own config-daemon image). Only `make images`
builds it and only a development cluster loads it; users pull upstream's real image. (The CNI plugins
are sriovop's own: images/cni-shim, `sriovop.devcluster.images.cni`.)
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
    StandIn(target="standin-device-plugin",
            name="ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.9.0",
            env="SRIOV_DEVICE_PLUGIN_IMAGE", entrypoint=(BINARY, "sleep")),
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
