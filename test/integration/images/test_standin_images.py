"""The stand-in images: upstream's CNI images' install contract, and a plugin that fails loudly.

Host: this machine, through a private containerd (own root, state and socket under a temp dir). The
plugin binary the init container installs is then run on the host as the CNI runtime would run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

from sriovop.devcluster.images.build import build_images
from sriovop.devcluster.images.standins import STANDINS
from test.support.containerd import private_containerd


def test_cni_standin_installs_its_plugin_and_the_plugin_refuses_to_pretend(tmp_path: Path) -> None:
    [cni] = [s for s in STANDINS if s.target == "standin-sriov-cni"]
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

    def call(command: str) -> subprocess.CompletedProcess[str]:
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": "x", "CNI_NETNS": "/proc/1/ns/net", "CNI_IFNAME": "net1",
               "CNI_PATH": str(bin_dir)}
        return subprocess.run([str(plugin)], input='{"cniVersion": "1.0.0", "name": "n", "type": "sriov"}',
                              env=env, capture_output=True, text=True, timeout=60, check=False)

    version = call("VERSION")
    assert version.returncode == 0 and "1.0.0" in json.loads(version.stdout)["supportedVersions"]
    add = call("ADD")
    assert add.returncode == 1
    error = json.loads(add.stdout)
    assert "stand-in" in error["msg"] and error["code"] >= 100  # a plugin-specific CNI error, not a success
