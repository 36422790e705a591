"""The attach plugin (sriovop/cni/attach) on a dev-cluster node, for clusters that run no Multus.

Per node:
- a CNI bin dir of the node's own: every plugin of the host's dir linked in, plus the static shim as
  `sriovop-attach` (containerd's `bin_dir` points here, so nothing is written to the host's plugin dir);
- `00-sriovop-attach.conflist` first in the node's conf dir, wrapping the node's default network (the
  bridge conflist), which therefore stays the pods' eth0;
- `sriovop cni-server --plugins sriovop-attach` with the node's socket dir; containerd gets that dir as
  SRIOVOP_CNI_SOCKET_DIR and passes it on to the plugins it runs, so the shims of the nodes sharing this
  host each reach their own node's server;
- an identity of its own (`system:sriovop-attach:<node>`) that may only read pods and
  NetworkAttachmentDefinitions and update pods/status (RBAC installed once per cluster by `install_rbac`).

Everything lives under the node's directory, so `down` leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from sriovop.cni.attach import config as attach_config
from sriovop.cni.attach import netconf
from sriovop.cni.attach.netconf import NetConf
from sriovop.devcluster import process
from sriovop.devcluster.deadlines import scaled
from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict
from sriovop.runtime.kinds import CLUSTER_ROLE, CLUSTER_ROLE_BINDING

PLUGIN: Final = attach_config.PLUGIN_TYPE
GROUP: Final = "sriovop:attach-plugins"
ROLE: Final = "sriovop-attach-plugin"
SERVER_READY_TIMEOUT_S = 60.0


def user_name(node: str) -> str:
    return f"system:sriovop-attach:{node}"


def install_rbac(client: Client) -> None:
    """What the plugin reads and writes: the pod and its networks, and the pod's network-status."""
    role = {"metadata": {"name": ROLE}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get", "update"]},
        {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["network-attachment-definitions"], "verbs": ["get"]},
    ]}
    binding = {"metadata": {"name": ROLE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]}
    for kind, obj in ((CLUSTER_ROLE, role), (CLUSTER_ROLE_BINDING, binding)):
        try:
            client.create(kind, obj)
        except Conflict as exc:
            if not exc.already_exists:
                raise


class AttachNode:
    def __init__(self, node_dir: Path, node: str, host_bin_dir: Path, shim: Path, kubeconfig: Path,
                 kubelet_root: Path) -> None:
        self.dir = node_dir / "cni"
        self.node = node
        self.host_bin_dir = host_bin_dir
        self.shim = shim
        self.kubeconfig = kubeconfig
        self.kubelet_root = kubelet_root
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def socket_dir(self) -> Path:
        return self.dir / "sock"

    @property
    def cache_dir(self) -> Path:
        return self.dir / "attach-cache"

    @property
    def log(self) -> Path:
        return self.dir.parent / "sriovop-attach.log"

    def containerd_env(self) -> dict[str, str]:
        return {"SRIOVOP_CNI_SOCKET_DIR": str(self.socket_dir)}

    def install_binaries(self) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        for plugin in sorted(self.host_bin_dir.iterdir()):
            link = self.bin_dir / plugin.name
            if plugin.name != PLUGIN and not link.exists():
                link.symlink_to(plugin)
        target = self.bin_dir / PLUGIN
        tmp = target.with_name(f".{PLUGIN}.tmp")
        tmp.write_bytes(self.shim.read_bytes())
        tmp.chmod(0o755)
        tmp.replace(target)

    def wrapper(self, default: NetConf, conf_dir: Path) -> dict[str, Any]:
        """Our conflist around the node's default network (also rendered for the QEMU guest node)."""
        return attach_config.wrapper(default, kubeconfig=self.kubeconfig, conf_dir=conf_dir,
                                     cache_dir=self.cache_dir, kubelet_root=self.kubelet_root)

    def install_conf(self, conf_dir: Path) -> Path:
        """Wrap the default network (the first other conf in the directory) in our conflist."""
        default = netconf.load_file(netconf.master_file(conf_dir, attach_config.CONF_FILE))
        wrapper = self.wrapper(default, conf_dir)
        path = conf_dir / attach_config.CONF_FILE
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(wrapper, indent=2))
        tmp.replace(path)
        return path

    def server_argv(self, python: str = sys.executable) -> list[str]:
        return [python, "-m", "sriovop.cli", "cni-server", "--socket-dir", str(self.socket_dir),
                "--plugins", PLUGIN, "--state-dir", str(self.dir / "state")]

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        # The delegates it runs (e.g. the `sriov` shim) reach this node's servers, not the host's default dir.
        self.proc = process.spawn(self.server_argv(), self.log, env={**os.environ, **self.containerd_env()})
        socket = self.socket_dir / f"{PLUGIN}.sock"
        limit = scaled(SERVER_READY_TIMEOUT_S)
        deadline = time.monotonic() + limit
        while not socket.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {PLUGIN} server of {self.node} exited with code {self.proc.returncode}; "
                                   f"last lines of {self.log}:\n{process.log_tail(self.log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {PLUGIN} server of {self.node} did not listen within {limit:.0f}s")
            time.sleep(0.1)

    def stop(self) -> None:
        process.terminate(self.proc)
        self.proc = None
