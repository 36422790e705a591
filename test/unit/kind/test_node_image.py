"""hack/kind/node_image.py: which component images a kind node carries and the build context it lays out.

No host: pure functions and files in a temporary directory (fake binaries; the one archive written holds
a small file), so this runs in the unit suite without Docker, Go builds or a registry.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from pathlib import Path
from types import ModuleType

import pytest

from test.support.oci_layout import read_archive

REPO = Path(__file__).resolve().parents[3]
LISTING = """registry.k8s.io/kube-apiserver:v1.35.4
registry.k8s.io/kube-controller-manager:v1.35.4
registry.k8s.io/kube-scheduler:v1.35.4
registry.k8s.io/kube-proxy:v1.35.4
registry.k8s.io/coredns/coredns:v1.12.1
registry.k8s.io/pause:3.10.1
registry.k8s.io/etcd:3.6.5-0
"""
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd",
            "kubeadm", "kubelet", "kubectl", "crictl")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kind_node_image", REPO / "hack" / "kind" / "node_image.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


node_image = _load()


@pytest.fixture
def bin_dirs(tmp_path: Path) -> list[Path]:
    """Two directories of fake binaries, as the control-plane and node caches are two."""
    first, second = tmp_path / "cp", tmp_path / "node"
    for d in (first, second):
        d.mkdir()
    for i, name in enumerate(BINARIES):
        path = (first if i % 2 else second) / name
        path.write_text(f"#!/bin/sh\necho {name}\n")
        path.chmod(0o755)
    return [first, second]


def test_every_listed_image_is_carried_except_coredns_which_is_skipped_with_a_reason() -> None:
    images, skipped = node_image.component_images(LISTING)
    assert {i.ref: i.binary for i in images} == {
        "registry.k8s.io/kube-apiserver:v1.35.4": "kube-apiserver",
        "registry.k8s.io/kube-controller-manager:v1.35.4": "kube-controller-manager",
        "registry.k8s.io/kube-scheduler:v1.35.4": "kube-scheduler",
        "registry.k8s.io/kube-proxy:v1.35.4": "kube-proxy",
        "registry.k8s.io/pause:3.10.1": "pause",
        "registry.k8s.io/etcd:3.6.5-0": "etcd",
    }
    assert list(skipped) == ["registry.k8s.io/coredns/coredns:v1.12.1"]
    assert "coredns" in skipped["registry.k8s.io/coredns/coredns:v1.12.1"]
    assert [i.ref for i in images if i.with_iptables] == ["registry.k8s.io/kube-proxy:v1.35.4"]


@pytest.mark.parametrize(("listing", "named"), [
    (LISTING + "registry.k8s.io/something-new:v1\n", "something-new"),
    (LISTING.replace("registry.k8s.io/etcd:3.6.5-0\n", ""), "etcd"),
    (LISTING.replace("pause:3.10.1", "pause"), "no tag"),
])
def test_a_listing_it_cannot_serve_is_refused_naming_the_image(listing: str, named: str) -> None:
    with pytest.raises(node_image.NodeImageError, match=named):
        node_image.component_images(listing)


def test_the_context_holds_the_node_files_binaries_version_and_the_pause_name_kubeadm_expects(
        tmp_path: Path, bin_dirs: list[Path]) -> None:
    out = tmp_path / "context"
    layout = node_image.write_context(LISTING, bin_dirs, "v1.35.4", out, say=lambda _: None, build_images=False)
    files = out / "files"
    assert (out / "Dockerfile").read_text().startswith("# The kind node image")
    assert (files / "kind" / "version").read_text() == "v1.35.4\n"
    for rel in ("usr/bin/kubeadm", "usr/bin/kubelet", "usr/bin/kubectl", "usr/local/bin/crictl",
                "usr/local/bin/entrypoint", "kind/bin/import-images.sh"):
        assert (files / rel).stat().st_mode & stat.S_IXUSR, rel
    assert (files / "usr/bin/kubeadm").read_text() == "#!/bin/sh\necho kubeadm\n"
    config = (files / "etc" / "containerd" / "config.toml").read_text()
    assert 'sandbox_image = "registry.k8s.io/pause:3.10.1"' in config
    assert "@PAUSE_IMAGE@" not in config
    assert "restrict_oom_score_adj = true" in config
    unit = (files / "etc/systemd/system/kubelet.service").read_text()
    assert "After=containerd.service kind-import-images.service" in unit
    assert layout["sandbox_image"] == "registry.k8s.io/pause:3.10.1"
    assert sorted(i["archive"] for i in layout["images"]) == sorted(
        f"kind/images/{n}.tar" for n in ("kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                         "kube-proxy", "pause", "etcd"))
    assert json.loads(json.dumps(layout)) == layout  # what `plan` prints


def test_a_binary_image_runs_its_binary_from_path_and_is_named_as_kubeadm_lists_it(
        tmp_path: Path, bin_dirs: list[Path]) -> None:
    images, _ = node_image.component_images(LISTING)
    scheduler = next(i for i in images if i.binary == "kube-scheduler")
    work = tmp_path / "work"
    work.mkdir()
    archive = node_image.write_component(scheduler, bin_dirs, tmp_path, work, say=lambda _: None)
    image = read_archive(archive)
    assert image.name == "registry.k8s.io/kube-scheduler:v1.35.4"
    assert image.config["config"]["Entrypoint"] == ["/usr/local/bin/kube-scheduler"]
    assert any(e.startswith("PATH=") and "/usr/local/bin" in e for e in image.config["config"]["Env"])
    members = {m.name: m for m in image.layer_members[0]}
    assert members["usr/local/bin/kube-scheduler"].mode & 0o777 == 0o755
    assert members["tmp"].mode & 0o7777 == 0o1777


def test_a_missing_binary_is_named(tmp_path: Path, bin_dirs: list[Path]) -> None:
    os.unlink(next(d / "kubeadm" for d in bin_dirs if (d / "kubeadm").exists()))
    with pytest.raises(node_image.NodeImageError, match="kubeadm"):
        node_image.plan(LISTING, bin_dirs, "v1.35.4")
