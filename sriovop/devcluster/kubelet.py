"""One kubelet per node: its own root directory, cgroup root, ports and containerd.

Every node shares the host's network namespace and IP, so nodes differ by name, ports and cgroup root.
Settings that this machine or a shared host needs, and why:
- `failCgroupV1: false`: the kubelet refuses cgroup v1 hosts otherwise (this machine is v1).
- `makeIPTablesUtilChains: false` and `--oom-score-adj=0`: no host-wide iptables chains shared between
  clusters, and no negative OOM score (which this kernel refuses).
- `imageGCHighThresholdPercent: 100`: images are imported, never pulled, so garbage-collecting one
  could not be undone; low eviction thresholds keep a busy disk from evicting test pods.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from sriovop.devcluster import process


class Kubelet:
    def __init__(self, binary: Path, node_dir: Path, name: str, node_ip: str, runtime_endpoint: str,
                 cgroup_root: str, kubeconfig: Path, client_ca: Path) -> None:
        self.binary = binary
        self.dir = node_dir
        self.name = name
        self.node_ip = node_ip
        self.runtime_endpoint = runtime_endpoint
        self.cgroup_root = cgroup_root
        self.kubeconfig = kubeconfig
        self.client_ca = client_ca
        self.port = 0
        self.healthz_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def root_dir(self) -> Path:
        return self.dir / "kubelet"

    @property
    def log(self) -> Path:
        return self.dir / "kubelet.log"

    def config(self) -> dict[str, object]:
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "failSwapOn": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            "containerRuntimeEndpoint": self.runtime_endpoint,
            "address": self.node_ip,
            "port": self.port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": self.healthz_port,
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.client_ca)},
            },
            "authorization": {"mode": "Webhook"},
            "clusterDomain": "cluster.local",
            "resolvConf": "/etc/resolv.conf",
            "makeIPTablesUtilChains": False,
            "serializeImagePulls": False,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "nodefs.inodesFree": "1%", "imagefs.available": "1%"},
            "volumePluginDir": str(self.dir / "volume-plugins"),
            "podLogsDir": str(self.dir / "pod-logs"),
            "nodeStatusReportFrequency": "10s",
        }

    def start(self) -> None:
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self.port, self.healthz_port = process.free_port(), process.free_port()
        config = self.dir / "kubelet.yaml"
        config.write_text(yaml.safe_dump(self.config()))
        self._spawn(config)

    def restart(self) -> None:
        """Stop and start again with the same configuration and ports, as a node's service manager restarts
        it: what device plugins and other node agents must survive."""
        self.stop()
        self._spawn(self.dir / "kubelet.yaml")

    def _spawn(self, config: Path) -> None:
        self.proc = process.spawn(
            [str(self.binary), f"--config={config}", f"--kubeconfig={self.kubeconfig}",
             f"--hostname-override={self.name}", f"--node-ip={self.node_ip}",
             f"--root-dir={self.root_dir}", f"--cert-dir={self.root_dir / 'pki'}", "--oom-score-adj=0"],
            self.log,
        )

    def healthy(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        process.terminate(self.proc)
        self.proc = None
