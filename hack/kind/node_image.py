#!/usr/bin/env python3
"""The parts of a kind node image that need no registry: component images and the docker build context.

kind's own `build node-image` downloads etcd, CoreDNS, pause, kindnetd and the storage provisioner from
registries. Here every image the control plane and kube-proxy run is written from binaries built on
this machine (hack/build-control-plane.sh, hack/build-node-components.sh, hack/kind/build-k8s-tools.sh),
as OCI archives that the node imports into containerd's k8s.io namespace when it boots
(kind-import-images.service), under the names `kubeadm config images list` prints.

    node_image.py plan    --images-list FILE --bin-dir DIR...             # JSON: what would be written
    node_image.py context --images-list FILE --bin-dir DIR... --out CTX   # the docker build context

Not written: CoreDNS (the failover needs no cluster DNS; kind's config skips kubeadm's addon/coredns
phase) and kindnetd (hack/kind/cni.sh writes a ptp conflist per node instead). The build context holds
the Dockerfile, the node's files (hack/kind/node/files), kubeadm/kubelet/kubectl, crictl,
/kind/version and the archives; hack/kind/build-node-image.sh builds it on the Debian base image.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sriovop.devcluster.images.oci import ImageConfig, Layer, write_image, write_layer  # noqa: E402

NODE_DIR = Path(__file__).resolve().parent / "node"
#: kubeadm's image name (last path element, without tag) → the binary the image runs.
BINARY_OF = {
    "kube-apiserver": "kube-apiserver",
    "kube-controller-manager": "kube-controller-manager",
    "kube-scheduler": "kube-scheduler",
    "kube-proxy": "kube-proxy",
    "etcd": "etcd",
    "pause": "pause",
}
#: Images kubeadm lists that this node image does not carry, and why.
SKIPPED = {"coredns": "no cluster DNS is needed: the kind config skips kubeadm's addon/coredns phase"}
#: kube-proxy programs the node's netfilter with iptables-restore (and reads conntrack state).
PROXY_PACKAGES = ("conntrack", "iptables")
#: Binaries the node itself runs, and where they go in the node's root filesystem.
NODE_BINARIES = {"kubeadm": "usr/bin", "kubelet": "usr/bin", "kubectl": "usr/bin", "crictl": "usr/local/bin"}
PAUSE_PLACEHOLDER = "@PAUSE_IMAGE@"


class NodeImageError(ValueError):
    """Bad input for the node image: the message names what is wrong."""


@dataclass(frozen=True)
class ComponentImage:
    ref: str  # e.g. registry.k8s.io/kube-apiserver:v1.35.4
    binary: str  # the binary the image runs (its entrypoint is on PATH)
    archive: str  # file name under /kind/images

    @property
    def with_iptables(self) -> bool:
        return self.binary == "kube-proxy"


def image_basename(ref: str) -> str:
    """`registry.k8s.io/coredns/coredns:v1.12.1` → `coredns`."""
    path = ref.rsplit("@", 1)[0]
    last = path.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def component_images(listing: str) -> tuple[list[ComponentImage], dict[str, str]]:
    """The images of `kubeadm config images list` this node image carries, and the skipped ones with
    the reason; an image that is neither is an error (a kubeadm release that needs something new)."""
    carried: list[ComponentImage] = []
    skipped: dict[str, str] = {}
    for line in listing.splitlines():
        ref = line.strip()
        if not ref or ref.startswith("#"):
            continue
        if ":" not in ref.rsplit("/", 1)[-1]:
            raise NodeImageError(f"images list: {ref!r} has no tag (expected the output of kubeadm config images list)")
        base = image_basename(ref)
        if base in SKIPPED:
            skipped[ref] = SKIPPED[base]
        elif base in BINARY_OF:
            carried.append(ComponentImage(ref, BINARY_OF[base], f"{base}.tar"))
        else:
            raise NodeImageError(f"images list: {ref!r} is not an image this node image knows how to build")
    names = {c.binary for c in carried}
    missing = sorted(set(BINARY_OF) - names)
    if missing:
        raise NodeImageError(f"images list: no image for {', '.join(missing)}")
    return carried, skipped


def find_binary(name: str, bin_dirs: Sequence[Path]) -> Path:
    for d in bin_dirs:
        candidate = d / name
        if candidate.is_file():
            return candidate
    raise NodeImageError(f"binary {name!r}: not found in {', '.join(str(d) for d in bin_dirs)}")


def pause_image(images: Sequence[ComponentImage]) -> str:
    return next(c.ref for c in images if c.binary == "pause")


def plan(listing: str, bin_dirs: Sequence[Path], version: str) -> dict[str, object]:
    """What `context` writes, as JSON-able data (every binary resolved, nothing built)."""
    images, skipped = component_images(listing)
    return {
        "kubernetes_version": version,
        "images": [{"ref": c.ref, "archive": f"kind/images/{c.archive}",
                    "binary": str(find_binary(c.binary, bin_dirs)) if c.binary != "pause" else "hack/pause",
                    "debian_packages": list(PROXY_PACKAGES) if c.with_iptables else []} for c in images],
        "skipped_images": skipped,
        "sandbox_image": pause_image(images),
        "node_binaries": {f"{where}/{name}": str(find_binary(name, bin_dirs)) for name, where in NODE_BINARIES.items()},
        "node_files": sorted(p.relative_to(NODE_DIR / "files").as_posix()
                             for p in (NODE_DIR / "files").rglob("*") if p.is_file()),
    }


def binary_layer(binary: Path, name: str, work: Path) -> Layer:
    """One layer: the binary at /usr/local/bin/<name> and a world-writable /tmp."""
    rootfs = work / f"{name}-rootfs"
    (rootfs / "usr" / "local" / "bin").mkdir(parents=True)
    (rootfs / "tmp").mkdir(mode=0o1777)
    (rootfs / "tmp").chmod(0o1777)
    target = rootfs / "usr" / "local" / "bin" / name
    shutil.copyfile(binary, target)
    target.chmod(0o755)
    return write_layer(rootfs, work / f"{name}.tar.gz", owner=(0, 0))


def _debian_layer(packages: Sequence[str], say: Callable[[str], None]) -> Layer:
    from sriovop.devcluster.images.debian import debian_layer  # mmdebstrap only when kube-proxy is built
    return debian_layer(packages, say)


def _pause_binary() -> Path:
    from sriovop.devcluster.images.gobuild import cached_binary
    from sriovop.devcluster.images.pause import pause_source_dir
    return cached_binary(pause_source_dir())


def write_component(image: ComponentImage, bin_dirs: Sequence[Path], out_dir: Path, work: Path,
                    say: Callable[[str], None]) -> Path:
    say(f"writing {image.archive} ({image.ref})")
    if image.binary == "pause":
        rootfs = work / "pause-rootfs"
        rootfs.mkdir()
        shutil.copyfile(_pause_binary(), rootfs / "pause")
        (rootfs / "pause").chmod(0o755)
        layers = [write_layer(rootfs, work / "pause.tar.gz", owner=(0, 0))]
        config = ImageConfig(entrypoint=("/pause",), user="65535:65535")
    else:
        layers = [binary_layer(find_binary(image.binary, bin_dirs), image.binary, work)]
        if image.with_iptables:
            layers.insert(0, _debian_layer(PROXY_PACKAGES, say))
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        config = ImageConfig(entrypoint=(f"/usr/local/bin/{image.binary}",), env=(f"PATH={path}",))
    archive = out_dir / image.archive
    write_image(archive, image.ref, layers, config)
    return archive


def write_context(listing: str, bin_dirs: Sequence[Path], version: str, out: Path,
                  say: Callable[[str], None], build_images: bool = True) -> dict[str, object]:
    """Fill `out` (created or emptied) with the docker build context of the node image."""
    layout = plan(listing, bin_dirs, version)
    images, _ = component_images(listing)
    if out.exists():
        shutil.rmtree(out)
    files = out / "files"
    shutil.copytree(NODE_DIR / "files", files, symlinks=True)
    config = files / "etc" / "containerd" / "config.toml"
    config.write_text(config.read_text().replace(PAUSE_PLACEHOLDER, pause_image(images)))
    (files / "kind").mkdir(exist_ok=True)
    (files / "kind" / "version").write_text(version + "\n")
    for name, where in NODE_BINARIES.items():
        target = files / where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(find_binary(name, bin_dirs), target)
        target.chmod(0o755)
    shutil.copyfile(NODE_DIR / "Dockerfile", out / "Dockerfile")
    archives = files / "kind" / "images"
    archives.mkdir(parents=True)
    if build_images:
        with tempfile.TemporaryDirectory(prefix="sriovop-kind-images-") as tmp:
            for image in images:
                work = Path(tmp) / image.binary
                work.mkdir()
                write_component(image, bin_dirs, archives, work, say)
    return layout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("plan", "context"))
    parser.add_argument("--images-list", type=Path, required=True,
                        help="the output of `kubeadm config images list --kubernetes-version V`")
    parser.add_argument("--bin-dir", type=Path, action="append", required=True,
                        help="a directory holding built binaries (repeatable; searched in order)")
    parser.add_argument("--kubernetes-version", required=True)
    parser.add_argument("--out", type=Path, help="the build context directory (context)")
    args = parser.parse_args(argv)
    listing = args.images_list.read_text()

    def say(message: str) -> None:
        print(f"[node-image] {message}", file=sys.stderr, flush=True)
    try:
        if args.action == "plan":
            layout = plan(listing, args.bin_dir, args.kubernetes_version)
        else:
            if args.out is None:
                parser.error("context needs --out")
            layout = write_context(listing, args.bin_dir, args.kubernetes_version, args.out, say)
    except NodeImageError as exc:
        print(f"node_image.py: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(layout, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
