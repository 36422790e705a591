"""The OCI writer: valid layouts whose digests check out, the same digests for the same input, and
clear errors for bad input. No host is touched (files under tmp_path only)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sriovop.devcluster.images.oci import ImageConfig, OCIError, write_image, write_layer
from test.support.oci_layout import read_archive

CONFIG = ImageConfig(entrypoint=("/bin/app",), cmd=("serve",), user="65532:65532",
                     env=("PATH=/usr/bin", "A=b=c"), working_dir="/srv")


def _rootfs(base: Path, content: bytes = b"#!/bin/sh\n") -> Path:
    root = base / "rootfs"
    (root / "bin").mkdir(parents=True)
    (root / "etc" / "z").mkdir(parents=True)
    (root / "bin" / "app").write_bytes(content)
    (root / "bin" / "app").chmod(0o755)
    (root / "etc" / "a.conf").write_text("x=1\n")
    os.link(root / "etc" / "a.conf", root / "etc" / "hard.conf")
    (root / "bin" / "sh").symlink_to("app")
    return root


def test_archive_is_a_valid_layout_with_the_config_and_names(tmp_path: Path) -> None:
    layer = write_layer(_rootfs(tmp_path), tmp_path / "layer.tgz")
    digest = write_image(tmp_path / "img.tar", "example.org/team/app:v1.2", [layer], CONFIG, architecture="amd64")
    image = read_archive(tmp_path / "img.tar")
    assert image.name == "example.org/team/app:v1.2"
    assert image.ref_name == "v1.2"
    assert image.manifest_digest == digest
    assert image.top_level[:2] == ["blobs", "blobs/sha256"] and "index.json" in image.top_level
    assert image.config["config"] == {"Entrypoint": ["/bin/app"], "Cmd": ["serve"], "User": "65532:65532",
                                      "Env": ["PATH=/usr/bin", "A=b=c"], "WorkingDir": "/srv"}
    assert image.config["architecture"] == "amd64"
    [members] = image.layer_members
    by_name = {m.name: m for m in members}
    assert [m.name for m in members] == sorted(by_name), "layer entries are not sorted"
    assert by_name["bin/app"].mode & 0o777 == 0o755
    assert by_name["bin/sh"].issym() and by_name["bin/sh"].linkname == "app"
    assert by_name["etc/hard.conf"].islnk() and by_name["etc/hard.conf"].linkname == "etc/a.conf"
    assert by_name["etc/z"].isdir()
    assert {m.mtime for m in members} == {0}


def test_same_input_gives_the_same_digests_and_different_input_does_not(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    first = write_layer(_rootfs(tmp_path / "a"), tmp_path / "a.tgz")
    second_root = _rootfs(tmp_path / "b")
    os.utime(second_root / "bin" / "app", (1_000_000, 1_000_000))  # mtimes must not matter
    second = write_layer(second_root, tmp_path / "b.tgz")
    other = write_layer(_rootfs(tmp_path / "c", content=b"#!/bin/bash\n"), tmp_path / "c.tgz")
    assert (first.digest, first.diff_id) == (second.digest, second.diff_id)
    assert (tmp_path / "a.tgz").read_bytes() == (tmp_path / "b.tgz").read_bytes()
    assert other.digest != first.digest
    one = write_image(tmp_path / "1.tar", "x.io/a:1", [first], CONFIG, architecture="amd64")
    two = write_image(tmp_path / "2.tar", "x.io/a:1", [second], CONFIG, architecture="amd64")
    assert one == two and (tmp_path / "1.tar").read_bytes() == (tmp_path / "2.tar").read_bytes()
    renamed = write_image(tmp_path / "3.tar", "x.io/a:2", [first], CONFIG, architecture="amd64")
    assert renamed == one, "the name lives in index.json, not in the manifest"
    assert (tmp_path / "3.tar").read_bytes() != (tmp_path / "1.tar").read_bytes()


def test_layers_stack_in_order_and_owner_can_be_forced(tmp_path: Path) -> None:
    lower = write_layer(_rootfs(tmp_path), tmp_path / "lower.tgz")
    upper_root = tmp_path / "upper"
    (upper_root / "opt").mkdir(parents=True)
    (upper_root / "opt" / "f").write_text("f")
    upper = write_layer(upper_root, tmp_path / "upper.tgz", owner=(0, 0))
    write_image(tmp_path / "img.tar", "x.io/a:1", [lower, upper, lower], CONFIG, architecture="amd64")
    image = read_archive(tmp_path / "img.tar")
    assert [d["digest"] for d in image.manifest["layers"]] == [lower.digest, upper.digest, lower.digest]
    assert all((m.uid, m.gid) == (0, 0) for m in image.layer_members[1])


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("x.io/a", CONFIG, "must be repository:tag"),
        ("x.io:5000/a", CONFIG, "must be repository:tag"),
        ("x.io/a@sha256:abc", CONFIG, "must be repository:tag"),
        ("x.io/a:", CONFIG, "empty tag"),
        ("x.io/a:1", ImageConfig(), "entrypoint/cmd"),
        ("x.io/a:1", ImageConfig(cmd=("x",), env=("NOVALUE",)), "env: 'NOVALUE'"),
        ("x.io/a:1", ImageConfig(cmd=("x",), working_dir="srv"), "working_dir"),
    ],
)
def test_bad_input_names_the_field(tmp_path: Path, name: str, config: ImageConfig, message: str) -> None:
    layer = write_layer(_rootfs(tmp_path), tmp_path / "layer.tgz")
    with pytest.raises(OCIError, match=re.escape(message)):
        write_image(tmp_path / "img.tar", name, [layer], config, architecture="amd64")
    assert not (tmp_path / "img.tar").exists()


def test_layer_of_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OCIError, match=r"rootfs: .* is not a directory"):
        write_layer(tmp_path / "nope", tmp_path / "layer.tgz")
