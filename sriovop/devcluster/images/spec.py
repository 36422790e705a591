"""What goes into each sriovop image: the one definition, read by `make images` and by `sriovop gen dockerfile`.

`make images` builds these images from Debian packages and wheels without a registry; images/Dockerfile,
the build for users with Docker, is generated from this list (dockerfile.py) and a unit test fails when
the committed file is stale. Another test checks that the names are the ones manifests/ and the
operator's image environment variables use, so the manifests apply unchanged.
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
    #: Ports the process listens on (the Dockerfile's EXPOSE; documentation only, as in any image).
    ports: tuple[int, ...] = ()
    #: Why the image runs as its user and what it is for: the comment above its Dockerfile stage.
    role: str = ""

    @property
    def debian_packages(self) -> tuple[str, ...]:
        return tuple(sorted({*RUNTIME_PACKAGES, *self.packages}))


IMAGES: tuple[ImageSpec, ...] = (
    ImageSpec(target="operator", name=f"ghcr.io/sriovop/sriovop-operator:{TAG}",
              entrypoint=("sriovop",), cmd=("operator",), user=NONROOT, ports=(8080, 8081),
              role="controllers; runs as an unprivileged user with a read-only root filesystem"),
    ImageSpec(target="webhook", name=f"ghcr.io/sriovop/sriovop-webhook:{TAG}",
              entrypoint=("sriovop", "webhook"), user=NONROOT, ports=(6443,),
              role="admission server; unprivileged"),
    # The config daemon calls these node tools: ip (iproute2), modprobe (kmod), ethtool, lspci (pciutils),
    # mstconfig (mstflint, Mellanox firmware settings).
    ImageSpec(target="config-daemon", name=f"ghcr.io/sriovop/sriovop-config-daemon:{TAG}",
              entrypoint=("sriovop", "config-daemon"), user=ROOT,
              packages=("ethtool", "iproute2", "kmod", "mstflint", "pciutils"),
              role="node agent; root, because it writes /sys and configures links on the host"),
    # The SR-IOV network device plugin (`sriovop device-plugin`): it also writes device-info files on the
    # host; it reads sysfs only.
    ImageSpec(target="device-plugin", name=f"ghcr.io/sriovop/sriovop-device-plugin:{TAG}",
              entrypoint=("sriovop", "device-plugin"), user=ROOT,
              role="SR-IOV network device plugin; root, for the kubelet's device-plugin directory"),
)


def by_target(target: str) -> ImageSpec:
    for spec in IMAGES:
        if spec.target == target:
            return spec
    raise KeyError(f"image {target!r}: not one of {', '.join(s.target for s in IMAGES)}")
