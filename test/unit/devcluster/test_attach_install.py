"""What the dev cluster writes for the attach plugin on a node (host: files under tmp_path only; the
running install is covered by test/integration/cluster/test_attach_cluster.py)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from sriovop.cni.attach import config as attach_config
from sriovop.devcluster import cnishim
from sriovop.devcluster.addressing import NodeNetwork
from sriovop.devcluster.attach import AttachNode
from sriovop.devcluster.containerd import Containerd


def _node(tmp_path: Path) -> tuple[AttachNode, Containerd]:
    host_bin = tmp_path / "host-bin"
    host_bin.mkdir()
    for name in ("bridge", "host-local", "macvlan"):
        (host_bin / name).write_text("#!/bin/sh\n")
    shim = tmp_path / "shim"
    shim.write_bytes(b"\x7fELF shim")
    node_dir = tmp_path / "nodes" / "n1"
    attach = AttachNode(node_dir, "n1", host_bin, shim, tmp_path / "attach.kubeconfig", node_dir / "kubelet")
    net = NodeNetwork("n1", ipaddress.ip_network("10.244.1.0/24"), "sovbr1")
    return attach, Containerd(node_dir, net, attach.bin_dir, attach.containerd_env())


def test_bin_dir_links_the_host_plugins_and_holds_the_shim(tmp_path: Path) -> None:
    attach, containerd = _node(tmp_path)
    attach.install_binaries()
    attach.install_binaries()  # a restart of the same directory
    entries = {p.name: p for p in attach.bin_dir.iterdir()}
    assert sorted(entries) == ["bridge", "host-local", "macvlan", "sriovop-attach"]
    assert entries["bridge"].resolve() == tmp_path / "host-bin" / "bridge"
    assert not entries["sriovop-attach"].is_symlink()
    assert entries["sriovop-attach"].read_bytes() == b"\x7fELF shim"
    assert f'bin_dir = "{attach.bin_dir}"' in containerd.config()
    assert containerd.env == {"SRIOVOP_CNI_SOCKET_DIR": str(attach.socket_dir)}


def test_conflist_sorts_first_and_wraps_the_bridge_network(tmp_path: Path) -> None:
    attach, containerd = _node(tmp_path)
    bridge = containerd.write_cni_conf()
    path = attach.install_conf(bridge.parent)
    assert sorted(p.name for p in bridge.parent.iterdir())[0] == path.name == "00-sriovop-attach.conflist"
    wrapper = json.loads(path.read_text())
    [plugin] = wrapper["plugins"]
    assert wrapper["cniVersion"] == containerd.cni_conflist()["cniVersion"]
    assert plugin["type"] == "sriovop-attach"
    assert plugin["delegates"] == [containerd.cni_conflist()]
    parsed = attach_config.parse(plugin)
    assert parsed.cache_dir == attach.cache_dir and parsed.kubelet_root == tmp_path / "nodes" / "n1" / "kubelet"
    assert parsed.kubeconfig == tmp_path / "attach.kubeconfig"
    assert parsed.default_network().name == containerd.net.bridge


def test_prebuilt_shim_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prebuilt = tmp_path / "cni-shim"
    prebuilt.write_bytes(b"\x7fELF")
    monkeypatch.setenv("SRIOVOP_CNI_SHIM", str(prebuilt))
    with pytest.raises(FileNotFoundError, match="not an executable file"):
        cnishim.shim_binary(tmp_path / "no-source")
    prebuilt.chmod(0o755)
    assert cnishim.shim_binary(tmp_path / "no-source") == prebuilt


def test_missing_source_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SRIOVOP_CNI_SHIM", raising=False)
    with pytest.raises(FileNotFoundError, match="source is not at"):
        cnishim.shim_binary(tmp_path / "no-source")
