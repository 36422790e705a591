"""What goes into each sriovop image: one list, read by the builder and checked against images/Dockerfile.

images/Dockerfile stays the build for users with Docker; `make images` builds the same images from
Debian packages and wheels without a registry. A test reads IMAGES and the Dockerfile and fails when
their entrypoints, users or installed packages differ, and another checks that the names are the ones
manifests/ and the operator's image environment variables use, so the manifests apply unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from sriovop import __version__

DEBIAN_SUITE = "bookworm"
# bookworm's glibc: the newest manylinux tag a wheel may carry to run on it.
DEBIAN_GLIBC = (2, 36)
PYTHON_VERSION = "3.11"
# Debian's python3 puts this directory on sys.path, so wheels installed there need no venv.
SITE_PACKAGES = f"/usr/local/lib/python{PYTHON_VERSION}/dist-packages"
# The Python runtime from Debian, and the C++ runtime grpcio's native module links against (the kubelet
# APIs: device plugin, pod-resources). The Dockerfile gets both from its python:*-slim-bookworm base
# instead (apt there depends on libstdc++6), so these are the one place the two builds differ by design.
RUNTIME_PACKAGES = ("libstdc++6", "python3")
ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
)
NONROOT = "65532:65532"
# Images are tagged with the package version, as manifests/ names them. A version tag (not `latest`) also
# makes the kubelet's default pull policy IfNotPresent for the DaemonSets the operator renders, so they
# start from imported images on a cluster that has no registry.
TAG = __version__
ROOT = "0:0"


@dataclass(frozen=True)
class ImageSpec:
    """One image: `target` is the Dockerfile stage and the archive's file name (build/images/TARGET.tar)."""

    target: str
    name: str
    entrypoint: tuple[str, ...]
    user: str
    cmd: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()  # Debian packages beyond the Python runtime (the Dockerfile's apt-get install)

    @property
    def debian_packages(self) -> tuple[str, ...]:
        return tuple(sorted({*RUNTIME_PACKAGES, *self.packages}))


IMAGES: tuple[ImageSpec, ...] = (
    ImageSpec(target="operator", name=f"ghcr.io/sriovop/sriovop-operator:{TAG}",
              entrypoint=("sriovop",), cmd=("operator",), user=NONROOT),
    ImageSpec(target="webhook", name=f"ghcr.io/sriovop/sriovop-webhook:{TAG}",
              entrypoint=("sriovop", "webhook"), user=NONROOT),
    # The config daemon writes sysfs and configures links on the host, and calls these node tools:
    # ip (iproute2), modprobe (kmod), ethtool, lspci (pciutils), mstconfig (mstflint, Mellanox firmware).
    ImageSpec(target="config-daemon", name=f"ghcr.io/sriovop/sriovop-config-daemon:{TAG}",
              entrypoint=("sriovop", "config-daemon"), user=ROOT,
              packages=("ethtool", "iproute2", "kmod", "mstflint", "pciutils")),
    # The SR-IOV network device plugin (`sriovop device-plugin`): root, because it serves sockets in the
    # kubelet's device-plugin directory and writes device-info files on the host; it reads sysfs only.
    ImageSpec(target="device-plugin", name=f"ghcr.io/sriovop/sriovop-device-plugin:{TAG}",
              entrypoint=("sriovop", "device-plugin"), user=ROOT),
)


def by_target(target: str) -> ImageSpec:
    for spec in IMAGES:
        if spec.target == target:
            return spec
    raise KeyError(f"image {target!r}: not one of {', '.join(s.target for s in IMAGES)}")
