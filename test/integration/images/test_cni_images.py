"""The CNI images: upstream's CNI image install contract, and the installed shim reaching a server.

Host: this machine, through a private containerd (own root, state and socket under a temp dir). The
plugin binary the init container installs is then run on the host as the CNI runtime would run it,
against a real CNI server (sriov handler) on a unix socket.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

from sriovop.cni.plugin import sriov_handler
from sriovop.cni.server import CniServer, ServerOptions
from sriovop.devcluster.images.build import build_images
from sriovop.devcluster.images.cni import CNI_IMAGES
from test.support.containerd import private_containerd


def test_cni_image_installs_the_shim_and_the_shim_reaches_the_server(tmp_path: Path) -> None:
    [cni] = [c for c in CNI_IMAGES if c.target == "sriov-cni"]
    archive = build_images(tmp_path / "images", targets=[cni.target], say=lambda _: None)[cni.target]
    bin_dir = tmp_path / "cni-bin"
    bin_dir.mkdir()
    with private_containerd() as ctrd:
        ctrd.ctr("images", "import", str(archive))
        assert cni.name in ctrd.image_names()
        # What the config daemon's init container does: the image's entrypoint with `--no-sleep`.
        proc = ctrd.ctr("run", "--rm", "--mount", f"type=bind,src={bin_dir},dst=/host/opt/cni/bin,options=rbind:rw",
                        cni.name, f"cni-{uuid.uuid4().hex[:8]}", *cni.entrypoint, "--no-sleep", timeout=180)
    assert "installed /host/opt/cni/bin/sriov" in proc.stdout
    plugin = bin_dir / "sriov"
    assert plugin.is_file() and os.access(plugin, os.X_OK)
    assert sorted(p.name for p in bin_dir.iterdir()) == ["sriov"]

    sockets = tmp_path / "sock"

    def call(command: str) -> subprocess.CompletedProcess[str]:
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": "x", "CNI_NETNS": "/proc/1/ns/net", "CNI_IFNAME": "net1",
               "CNI_PATH": str(bin_dir), "SRIOVOP_CNI_SOCKET_DIR": str(sockets)}
        return subprocess.run([str(plugin)], input='{"cniVersion": "1.0.0", "name": "n", "type": "sriov"}',
                              env=env, capture_output=True, text=True, timeout=60, check=False)

    down = call("VERSION")
    assert down.returncode == 1 and str(sockets / "sriov.sock") in json.loads(down.stdout)["msg"]
    handler = sriov_handler(ServerOptions(state_dir=tmp_path / "state"))
    with CniServer(sockets, {"sriov": handler}):
        version = call("VERSION")
        assert version.returncode == 0 and "1.0.0" in json.loads(version.stdout)["supportedVersions"]
        add = call("ADD")
        assert add.returncode == 1 and json.loads(add.stdout)["details"].startswith("deviceID:")
