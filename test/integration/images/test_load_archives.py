"""`sriovop dev images load` / load_archives: every archive into every node's containerd.

Host: this machine, with two private containerds standing for two nodes (each node directory's
containerd.sock is a link to one of them), the layout `sriovop dev cluster up --nodes 2` creates.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop.cli import main
from sriovop.devcluster.images.load import LoadError, load_archives
from sriovop.devcluster.images.oci import ImageConfig, write_image, write_layer
from sriovop.devcluster.images.pause import PAUSE_IMAGE, ensure_pause_archive
from test.support.containerd import Containerd, private_containerd

SMALL_IMAGE = "example.org/sriovop-test/small:v1"


@pytest.fixture(scope="module")
def nodes() -> Iterator[list[Containerd]]:
    with ExitStack() as stack:
        yield [stack.enter_context(private_containerd()) for _ in range(2)]


def _cluster_dir(base: Path, daemons: list[Containerd]) -> Path:
    for i, daemon in enumerate(daemons, start=1):
        node = base / "nodes" / f"sriovop-node-{i}"
        node.mkdir(parents=True)
        (node / "containerd.sock").symlink_to(daemon.address)
    return base


def _small_archive(tmp_path: Path, text: str = "hello\n") -> Path:
    rootfs = tmp_path / "small-rootfs"
    rootfs.mkdir()
    (rootfs / "hello").write_text(text)
    layer = write_layer(rootfs, tmp_path / "small.tgz", owner=(0, 0))
    write_image(tmp_path / "small.tar", SMALL_IMAGE, [layer], ImageConfig(cmd=("/hello",)))
    return tmp_path / "small.tar"


def test_every_archive_reaches_every_node(nodes: list[Containerd], tmp_path: Path) -> None:
    cluster = _cluster_dir(tmp_path / "cluster", nodes)
    archives = [ensure_pause_archive(), _small_archive(tmp_path)]
    said: list[str] = []
    loaded = load_archives(cluster, archives, say=said.append)
    assert loaded == {f"sriovop-node-{i}": [a.name for a in archives] for i in (1, 2)}
    for daemon in nodes:
        assert {PAUSE_IMAGE, SMALL_IMAGE} <= daemon.image_names()
    assert len(said) == 4 and all("importing" in line for line in said)
    said.clear()
    assert load_archives(cluster, archives, say=said.append) == loaded
    assert len(said) == 4 and all("is already there" in line for line in said), said


def test_cli_loads_a_directory_of_archives(nodes: list[Containerd], tmp_path: Path) -> None:
    cluster = _cluster_dir(tmp_path / "cluster", nodes)
    images = tmp_path / "images"
    images.mkdir()
    _small_archive(tmp_path).rename(images / "small.tar")
    for daemon in nodes:
        daemon.ctr("images", "rm", SMALL_IMAGE, check=False)
    result = CliRunner().invoke(main, ["dev", "images", "load", "--dir", str(cluster), "--images", str(images)])
    assert result.exit_code == 0, result.output
    assert "sriovop-node-1\tsmall.tar" in result.output and "sriovop-node-2\tsmall.tar" in result.output
    for daemon in nodes:
        assert SMALL_IMAGE in daemon.image_names()


def test_a_cluster_without_nodes_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    _small_archive(tmp_path).rename(tmp_path / "images" / "small.tar")
    with pytest.raises(LoadError, match="the cluster has no nodes"):
        load_archives(tmp_path, [tmp_path / "images" / "small.tar"])
    result = CliRunner().invoke(main, ["dev", "images", "load", "--dir", str(tmp_path),
                                       "--images", str(tmp_path / "images")])
    assert result.exit_code == 1
    assert f"--dir {tmp_path}: the cluster has no nodes" in result.output
    assert "--nodes" in result.output


def test_missing_archives_and_empty_directories_are_named(nodes: list[Containerd], tmp_path: Path) -> None:
    cluster = _cluster_dir(tmp_path / "cluster", nodes)
    with pytest.raises(LoadError, match=r"archives: not found: .*nope\.tar"):
        load_archives(cluster, [tmp_path / "nope.tar"])
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["dev", "images", "load", "--dir", str(cluster),
                                       "--images", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "no *.tar image archives there" in result.output


def test_an_import_failure_names_the_node(nodes: list[Containerd], tmp_path: Path) -> None:
    cluster = _cluster_dir(tmp_path / "cluster", nodes[:1])
    # A layout whose index names a new image but whose blobs are missing: containerd refuses it.
    whole_archive = _small_archive(tmp_path, text="never imported")
    with tarfile.open(whole_archive) as whole, tarfile.open(tmp_path / "broken.tar", "w") as broken:
        for member in whole.getmembers():
            if not member.name.startswith("blobs"):
                broken.addfile(member, whole.extractfile(member))
    with pytest.raises(LoadError, match=r"node sriovop-node-1: importing .*broken\.tar"):
        load_archives(cluster, [tmp_path / "broken.tar"])
    (tmp_path / "garbage.tar").write_bytes(b"not a tar archive")
    with pytest.raises(LoadError, match=r"garbage\.tar is not a one-image OCI archive"):
        load_archives(cluster, [tmp_path / "garbage.tar"])
