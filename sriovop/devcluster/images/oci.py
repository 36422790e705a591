"""Write OCI image-layout archives from plain directories, without a container engine or a registry.

No registry can be reached where the development cluster runs, so its images are built from local
files and imported with `ctr -n k8s.io images import FILE`. containerd takes the image name from the
`io.containerd.image.name` annotation of the index entry.

Everything is deterministic (sorted entries, fixed mtimes, numeric owners only, gzip without a name or
timestamp), so the same input gives the same digests: a rebuild that changed nothing imports as the
same image, and a cached layer can be reused by digest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import platform
import stat
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
ANNOTATION_CONTAINERD_NAME = "io.containerd.image.name"
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"
FIXED_MTIME = 0
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class OCIError(ValueError):
    """Bad input for an image: the message names the field and the reason."""


def host_architecture() -> str:
    """The OCI/Go name of this machine's architecture (images run here, so they are built for it)."""
    machine = platform.machine()
    try:
        return _GOARCH[machine]
    except KeyError:
        raise OCIError(f"architecture {machine!r} has no OCI name known here") from None


@dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an OCI image config (the fields `ctr run` and the kubelet read)."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    user: str = ""
    env: tuple[str, ...] = ()
    working_dir: str = "/"
    labels: tuple[tuple[str, str], ...] = ()

    def validate(self) -> None:
        if not self.entrypoint and not self.cmd:
            raise OCIError("entrypoint/cmd: at least one must be set, or the image has nothing to run")
        for item in self.env:
            if "=" not in item or item.startswith("="):
                raise OCIError(f"env: {item!r} is not NAME=VALUE")
        if self.working_dir and not self.working_dir.startswith("/"):
            raise OCIError(f"working_dir: {self.working_dir!r} must be an absolute path")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.entrypoint:
            out["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            out["Cmd"] = list(self.cmd)
        if self.user:
            out["User"] = self.user
        if self.env:
            out["Env"] = list(self.env)
        if self.working_dir:
            out["WorkingDir"] = self.working_dir
        if self.labels:
            out["Labels"] = dict(self.labels)
        return out


@dataclass(frozen=True)
class Layer:
    """A gzip-compressed layer blob on disk, with the two digests an image needs."""

    path: Path
    digest: str  # sha256 of the compressed blob (manifest)
    diff_id: str  # sha256 of the uncompressed tar (config rootfs.diff_ids)
    size: int

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": MEDIA_LAYER_GZIP, "digest": self.digest, "size": self.size}


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...
    def flush(self) -> None: ...


@dataclass
class _HashingWriter:
    """A write-only file object that hashes and counts what passes through to `sink`."""

    sink: _Sink | None
    sha: Any = field(default_factory=hashlib.sha256)
    size: int = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        if self.sink is not None:
            self.sink.write(data)
        return len(data)

    def flush(self) -> None:
        if self.sink is not None:
            self.sink.flush()

    def digest(self) -> str:
        return "sha256:" + self.sha.hexdigest()


def _ordered(root: Path) -> list[Path]:
    """Every path under root sorted by its relative path's bytes: parents come before children."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        found.extend(Path(dirpath, n) for n in (*dirnames, *filenames))
    return sorted(found, key=lambda p: os.fsencode(p.relative_to(root).as_posix()))


def _tarinfo(tar: tarfile.TarFile, path: Path, arcname: str, owner: tuple[int, int] | None) -> tarfile.TarInfo:
    info = tar.gettarinfo(str(path), arcname)
    info.mtime = FIXED_MTIME
    info.uname = ""
    info.gname = ""
    if owner is not None:
        info.uid, info.gid = owner
    return info


def write_layer(rootfs: Path, out: Path, owner: tuple[int, int] | None = None, compresslevel: int = 6) -> Layer:
    """Pack `rootfs` (its contents become `/`) into a gzip layer at `out`; return its digests.

    Owners are kept numerically (a rootfs built as root has root-owned files) unless `owner` forces
    one uid/gid for everything (files a builder staged as itself belong to root in the image). Sockets
    are skipped: a tar cannot carry them and nothing in an image needs one.
    """
    if not rootfs.is_dir():
        raise OCIError(f"rootfs: {rootfs} is not a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "wb") as raw:
        compressed = _HashingWriter(raw)
        with gzip.GzipFile(filename="", mode="wb", fileobj=compressed,
                           mtime=FIXED_MTIME, compresslevel=compresslevel) as gz:
            uncompressed = _HashingWriter(gz)
            with tarfile.open(fileobj=uncompressed, mode="w|", format=tarfile.PAX_FORMAT,  # type: ignore[call-overload]
                              encoding="utf-8") as tar:
                for path in _ordered(rootfs):
                    mode = path.lstat().st_mode
                    if stat.S_ISSOCK(mode):
                        continue
                    info = _tarinfo(tar, path, path.relative_to(rootfs).as_posix(), owner)
                    if info.isreg():
                        with open(path, "rb") as fh:
                            tar.addfile(info, fh)
                    else:
                        tar.addfile(info)
    os.replace(tmp, out)
    return Layer(path=out, digest=compressed.digest(), diff_id=uncompressed.digest(), size=compressed.size)


def _json_blob(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = FIXED_MTIME
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mtime = FIXED_MTIME
    info.mode = 0o755
    tar.addfile(info)


def validate_reference(name: str) -> str:
    """Return the tag of a `registry/repo:tag` reference; raise OCIError naming what is wrong."""
    last = name.rsplit("/", 1)[-1]
    if ":" not in last or "@" in name:
        raise OCIError(f"image name {name!r}: must be repository:tag (containerd imports it under that name)")
    tag = last.rsplit(":", 1)[1]
    if not tag or name != name.strip() or any(c.isspace() for c in name):
        raise OCIError(f"image name {name!r}: empty tag or whitespace")
    return tag


@dataclass(frozen=True)
class ImagePlan:
    """An image's small blobs computed in memory, so a builder can tell whether an archive is current
    (`index_digest` covers the name, the config and every layer) before writing anything."""

    name: str
    layers: tuple[Layer, ...]
    config_blob: bytes
    manifest_blob: bytes
    index_blob: bytes

    @property
    def manifest_digest(self) -> str:
        return _digest(self.manifest_blob)

    @property
    def index_digest(self) -> str:
        return _digest(self.index_blob)

    def write(self, out: Path) -> None:
        """Write the archive to a temporary file and rename it, so a reader never sees half of one."""
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".part")
        blobs: dict[str, bytes | Layer] = {_digest(self.config_blob): self.config_blob,
                                           self.manifest_digest: self.manifest_blob}
        for layer in self.layers:
            blobs.setdefault(layer.digest, layer)
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            _add_dir(tar, "blobs")
            _add_dir(tar, "blobs/sha256")
            for digest in sorted(blobs):
                blob = blobs[digest]
                arcname = "blobs/sha256/" + digest.removeprefix("sha256:")
                if isinstance(blob, Layer):
                    info = tarfile.TarInfo(arcname)
                    info.size, info.mtime, info.mode = blob.size, FIXED_MTIME, 0o644
                    with open(blob.path, "rb") as fh:
                        tar.addfile(info, fh)
                else:
                    _add_bytes(tar, arcname, blob)
            _add_bytes(tar, "index.json", self.index_blob)
            _add_bytes(tar, "oci-layout", _json_blob({"imageLayoutVersion": "1.0.0"}))
        os.replace(tmp, out)


def plan_image(name: str, layers: Sequence[Layer], config: ImageConfig, architecture: str | None = None) -> ImagePlan:
    """Validate the input and compute the config, manifest and index of `layers` (bottom first)."""
    tag = validate_reference(name)
    config.validate()
    if not layers:
        raise OCIError("layers: an image needs at least one layer")
    arch = architecture or host_architecture()
    config_blob = _json_blob({
        "architecture": arch,
        "os": "linux",
        "config": config.to_json(),
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created_by": f"sriovop layer {layer.diff_id}"} for layer in layers],
    })
    manifest_blob = _json_blob({
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": _digest(config_blob), "size": len(config_blob)},
        "layers": [layer.descriptor() for layer in layers],
    })
    index_blob = _json_blob({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": MEDIA_MANIFEST,
            "digest": _digest(manifest_blob),
            "size": len(manifest_blob),
            "platform": {"architecture": arch, "os": "linux"},
            "annotations": {ANNOTATION_CONTAINERD_NAME: name, ANNOTATION_REF_NAME: tag},
        }],
    })
    return ImagePlan(name, tuple(layers), config_blob, manifest_blob, index_blob)


def write_image(out: Path, name: str, layers: Sequence[Layer], config: ImageConfig,
                architecture: str | None = None) -> str:
    """Write an OCI image-layout tar of `layers` (bottom first) named `name`; return the manifest digest."""
    plan = plan_image(name, layers, config, architecture)
    plan.write(out)
    return plan.manifest_digest
