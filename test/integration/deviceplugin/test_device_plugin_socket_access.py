"""Only root on the node reaches the device plugin's sockets: a non-root process cannot connect, root can.

Host: the simulated SR-IOV host (one E810 PF, 4 VFs) for the devices; this machine's kernel for the
unix socket permission check. The plugin runs as a process in plugin-watcher mode (it serves its socket
in the registry directory and waits for the kubelet's GetInfo), so no kubelet is needed to reach it.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from pathlib import Path

from sriovop.deviceplugin.config import parse_config
from sriovop.deviceplugin.pools import ResourcePool
from sriovop.deviceplugin.server import ResourceServer
from sriovop.host.paths import HostPaths
from test.support.device_plugin_process import device_plugin
from test.support.host_sim import applier, sim_host
from test.support.poll import wait_for

NOBODY = 65534
CONNECT = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('connected')"


def test_a_non_root_process_cannot_connect_to_the_device_plugin_socket(tmp_path: Path) -> None:
    registry = tmp_path / "plugins_registry"
    config = tmp_path / "config.json"
    with sim_host(tmp_path, ["e810:1"]) as (sim, host):
        pf = host.discover()[0]
        applier(host).apply([{"pciAddress": pf["pciAddress"], "name": pf["name"], "numVfs": 4,
                              "vfGroups": [{"deviceType": "netdevice", "vfRange": "0-3"}]}])
        config.write_text(json.dumps({"resourceList": [{"resourceName": "guarded",
                                                        "selectors": [{"pfNames": [pf["name"]]}]}]}))
        # The directory is world-traversable on purpose: the socket's own mode must do the refusing.
        registry.mkdir(mode=0o755)
        tmp_path.chmod(0o755)
        with device_plugin(tmp_path / "dp.log", f"--config-file={config}", "--resource-prefix=sim.io",
                           f"--host-root={sim.root}", "--simulated-host", f"--plugin-registry-dir={registry}",
                           f"--devinfo-dir={tmp_path / 'devinfo'}", "--watch-interval=0.5"):
            sock = wait_for(lambda: next(iter(registry.glob("*.sock")), None), timeout=120,
                            what="the device plugin's socket in the registry directory")
            mode = sock.stat()
            assert stat.S_ISSOCK(mode.st_mode) and stat.S_IMODE(mode.st_mode) == 0o600, oct(mode.st_mode)
            assert mode.st_uid == 0
            refused = subprocess.run(["/usr/bin/python3", "-c", CONNECT, str(sock)], user=NOBODY, group=NOBODY,
                                     capture_output=True, text=True, timeout=60, check=False)
            assert refused.returncode != 0 and "PermissionError" in refused.stderr, refused.stderr
            assert os.getuid() == 0, "the root half of this test needs root"
            with socket.socket(socket.AF_UNIX) as root_conn:
                root_conn.connect(str(sock))


def test_a_stopping_plugin_leaves_the_socket_its_successor_bound(tmp_path: Path) -> None:
    """A DaemonSet rollout: the new plugin binds the same path while the old one is still stopping. The
    old one must not remove the new one's socket (the kubelet's plugin watcher would drop the resource).
    Host: this machine (two gRPC servers on one unix socket path; no devices needed)."""
    [config] = parse_config(json.dumps({"resourceList": [{"resourceName": "rolled", "selectors": {}}]}), "sim.io")
    path = tmp_path / "sim.io_rolled.sock"
    old = ResourceServer(ResourcePool(config), path, HostPaths(tmp_path), tmp_path / "devinfo")
    new = ResourceServer(ResourcePool(config), path, HostPaths(tmp_path), tmp_path / "devinfo")
    old.start()
    new.start()
    successor = path.stat().st_ino
    old.stop()
    try:
        assert path.is_socket() and path.stat().st_ino == successor
    finally:
        new.stop()
    assert not path.exists(), "a plugin removes its own socket when it stops"
