"""Read an OCI image-layout tar back and check every digest and size it claims (a reader's view).

Used by the image tests to assert an archive is valid without a container engine: the index points at
a manifest, the manifest at a config and layers, each blob's sha256 and size match, and each layer's
uncompressed sha256 is the diff_id the config lists.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ReadImage:
    name: str
    ref_name: str
    manifest_digest: str
    manifest: dict[str, Any]
    config: dict[str, Any]
    layer_members: list[list[tarfile.TarInfo]]
    top_level: list[str]


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_archive(path: Path) -> ReadImage:
    """Parse and verify the archive; raise AssertionError naming the first inconsistency."""
    with tarfile.open(path) as tar:
        members = {m.name: m for m in tar.getmembers()}

        def blob(desc: dict[str, Any]) -> bytes:
            name = "blobs/sha256/" + desc["digest"].removeprefix("sha256:")
            assert name in members, f"{desc['digest']} is referenced but not in the archive"
            fh = tar.extractfile(members[name])
            assert fh is not None
            data = fh.read()
            assert _sha(data) == desc["digest"], f"blob {name} does not hash to its name"
            assert len(data) == desc["size"], f"blob {name} is {len(data)} bytes, descriptor says {desc['size']}"
            return data

        layout_fh = tar.extractfile(members["oci-layout"])
        assert layout_fh is not None
        assert json.loads(layout_fh.read()) == {"imageLayoutVersion": "1.0.0"}
        index_fh = tar.extractfile(members["index.json"])
        assert index_fh is not None
        index = json.loads(index_fh.read())
        assert index["schemaVersion"] == 2 and len(index["manifests"]) == 1, index
        entry = index["manifests"][0]
        manifest = json.loads(blob(entry))
        assert manifest["mediaType"] == entry["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
        config = json.loads(blob(manifest["config"]))
        diff_ids = config["rootfs"]["diff_ids"]
        assert len(diff_ids) == len(manifest["layers"]), "config diff_ids and manifest layers differ in count"
        layer_members = []
        for desc, diff_id in zip(manifest["layers"], diff_ids, strict=True):
            assert desc["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
            raw = gzip.decompress(blob(desc))
            assert _sha(raw) == diff_id, f"layer {desc['digest']}: uncompressed sha256 is not its diff_id"
            with tarfile.open(fileobj=io.BytesIO(raw)) as layer:
                layer_members.append(layer.getmembers())
        assert config["os"] == "linux" and entry["platform"]["architecture"] == config["architecture"]
        annotations = entry["annotations"]
        return ReadImage(
            name=annotations["io.containerd.image.name"],
            ref_name=annotations["org.opencontainers.image.ref.name"],
            manifest_digest=entry["digest"],
            manifest=manifest,
            config=config,
            layer_members=layer_members,
            top_level=sorted(members),
        )
