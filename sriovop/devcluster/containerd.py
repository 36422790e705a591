"""One containerd per node, with its own root, state, socket, CNI config and runc root.

The CRI settings are the ones this machine needs (see docs/development.md, "A local cluster with kubelet nodes"):
- `restrict_oom_score_adj`: the kernel refuses a negative oom_score_adj even to root here, and the pause
  container asks for -998; clamping lets sandboxes start (harmless where the kernel allows it).
- `netns_mounts_under_state_dir`: pod network namespaces are bind-mounted under the node's state
  directory instead of the host-wide /var/run/netns, so `down` finds every one of them under DIR.
- cgroupfs (not systemd) cgroups, matching the kubelet's `cgroupDriver`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from sriovop.devcluster import process
from sriovop.devcluster.addressing import NodeNetwork
from sriovop.devcluster.deadlines import scaled
from sriovop.devcluster.images.pause import PAUSE_IMAGE

CNI_BIN_DIR = "/usr/lib/cni"
NAMESPACE = "k8s.io"
READY_TIMEOUT_S = 60.0
_SUN_PATH_MAX = 107


class Containerd:
    def __init__(self, node_dir: Path, net: NodeNetwork, cni_bin_dir: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        """`cni_bin_dir`: the node's own plugin directory (default: the host's); `env`: added to
        containerd's environment, which the CNI plugins it runs inherit."""
        self.dir = node_dir
        self.net = net
        self.cni_bin_dir = cni_bin_dir or Path(CNI_BIN_DIR)
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.dir / "containerd.sock"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def log(self) -> Path:
        return self.dir / "containerd.log"

    @property
    def cni_conf_dir(self) -> Path:
        return self.dir / "cni" / "net.d"

    def config(self) -> str:
        root, state = self.dir / "containerd" / "root", self.dir / "containerd" / "state"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        return "\n".join([
            "version = 2",
            f'root = "{root}"',
            f'state = "{state}"',
            "oom_score = 0",
            'disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",'
            ' "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]',
            "[grpc]",
            f'  address = "{self.socket}"',
            "[ttrpc]",
            f'  address = "{self.socket}.ttrpc"',
            "[metrics]",
            '  address = ""',
            '[plugins."io.containerd.internal.v1.opt"]',
            f'  path = "{self.dir / "containerd" / "opt"}"',
            f"[{cri}]",
            f'  sandbox_image = "{PAUSE_IMAGE}"',
            "  restrict_oom_score_adj = true",
            "  netns_mounts_under_state_dir = true",
            '  stream_server_address = "127.0.0.1"',
            '  stream_server_port = "0"',
            "  enable_selinux = false",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            f"[{cri}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{cri}.containerd.runtimes.runc.options]",
            "  SystemdCgroup = false",
            f'  Root = "{self.dir / "containerd" / "runc"}"',
            f"[{cri}.cni]",
            f'  bin_dir = "{self.cni_bin_dir}"',
            f'  conf_dir = "{self.cni_conf_dir}"',
            "  max_conf_num = 1",
            "",
        ])

    def cni_conflist(self) -> dict[str, object]:
        """A bridge per node with host-local IPAM; the bridge is the pods' gateway, so the host routes
        to every pod subnet directly (no masquerade: pods talk to the host with their own IPs)."""
        net = self.net
        return {
            "cniVersion": "1.0.0",
            "name": net.bridge,
            "plugins": [{
                "type": "bridge", "bridge": net.bridge, "isGateway": True, "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(net.subnet), "gateway": str(net.gateway)}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(self.dir / "cni" / "ipam"),
                },
            }],
        }

    def write_cni_conf(self) -> Path:
        """The node's default network (idempotent: a wrapper installed before start sees the same file)."""
        self.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        path = self.cni_conf_dir / "10-sriovop-bridge.conflist"
        path.write_text(json.dumps(self.cni_conflist(), indent=2))
        return path

    def start(self) -> None:
        if len(str(self.socket)) + len(".ttrpc") > _SUN_PATH_MAX:
            raise RuntimeError(
                f"--dir is too long for a unix socket: {self.socket}.ttrpc exceeds {_SUN_PATH_MAX} bytes; "
                "use a shorter cluster directory"
            )
        self.write_cni_conf()
        config = self.dir / "containerd.toml"
        config.write_text(self.config())
        self.proc = process.spawn(["containerd", "--config", str(config)], self.log, env={**os.environ, **self.env})
        limit = scaled(READY_TIMEOUT_S)
        deadline = time.monotonic() + limit
        while not self._serving():
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"containerd of {self.net.name} exited with code {self.proc.returncode}; "
                    f"last lines of {self.log}:\n{process.log_tail(self.log)}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"containerd of {self.net.name} did not serve within {limit:.0f}s")
            time.sleep(0.1)

    def _serving(self) -> bool:
        if not self.socket.exists():
            return False
        done = subprocess.run(
            ["ctr", "--address", str(self.socket), "version"], capture_output=True, check=False, timeout=10
        )
        return done.returncode == 0

    def import_image(self, archive: Path) -> None:
        subprocess.run(
            ["ctr", "--address", str(self.socket), "-n", NAMESPACE, "images", "import", str(archive)],
            check=True, capture_output=True, timeout=120,
        )

    def stop(self) -> None:
        process.terminate(self.proc)
        self.proc = None
