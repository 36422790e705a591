"""A cluster with kubelet nodes for tests, started and stopped with the same commands users run.

`sriovop dev cluster up --dir DIR --nodes N` / `down --dir DIR` run in a subprocess; the returned
ClusterNodes says where everything is (kubeconfig, each node's containerd socket, the pod subnets).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sriovop.devcluster.addressing import ClusterNetwork
from sriovop.devcluster.images.oci import ImageConfig, write_image, write_layer
from sriovop.devcluster.images.pause import PAUSE_IMAGE
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import POD

SRIOVOP = [sys.executable, "-m", "sriovop.cli"]
APICHECK_SRC = Path(__file__).resolve().parent / "apicheck"
APICHECK_IMAGE = "sriovop.test/apicheck:dev"
UP_TIMEOUT_S = 600.0
POD_TIMEOUT_S = 180.0


def pod_on(node: str, name: str, image: str = PAUSE_IMAGE, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": image, "imagePullPolicy": "IfNotPresent"}], **spec},
    }


def finished_phase(kube: Client, namespace: str, name: str) -> str | None:
    phase = (kube.get(POD, name, namespace).get("status") or {}).get("phase")
    return str(phase) if phase in ("Succeeded", "Failed") else None


def running_pod(kube: Client, namespace: str, name: str) -> dict[str, Any] | None:
    pod = kube.get(POD, name, namespace)
    status = pod.get("status") or {}
    return dict(pod) if status.get("phase") == "Running" and status.get("podIP") else None


@dataclass(frozen=True)
class ClusterNodes:
    dir: Path
    kubeconfig: Path
    network: ClusterNetwork
    up_output: str

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.network.nodes]

    def containerd_socket(self, node: str) -> Path:
        return self.dir / "nodes" / node / "containerd.sock"

    def import_image(self, archive: Path) -> None:
        """Import an OCI archive into every node's containerd (pods then use it with IfNotPresent)."""
        for node in self.node_names:
            subprocess.run(["ctr", "--address", str(self.containerd_socket(node)), "-n", "k8s.io",
                            "images", "import", str(archive)], check=True, capture_output=True, timeout=300)


def pids_in(cgroup: Path) -> list[int]:
    """Every process in a cgroup directory and below it (one hierarchy, v1 or v2)."""
    return [int(p) for procs in cgroup.rglob("cgroup.procs") for p in procs.read_text().split()]


def cluster_up(directory: Path, nodes: int, audit_policy: Path | None = None) -> ClusterNodes:
    audit = ["--audit-policy", str(audit_policy)] if audit_policy is not None else []
    done = subprocess.run([*SRIOVOP, "dev", "cluster", "up", "--dir", str(directory), "--nodes", str(nodes), *audit],
                          capture_output=True, text=True, timeout=UP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cluster up failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    network = ClusterNetwork.from_json(json.loads((directory / "cluster.json").read_text()))
    return ClusterNodes(directory, directory / "kubeconfig", network, done.stdout + done.stderr)


def cluster_down(directory: Path) -> str:
    done = subprocess.run([*SRIOVOP, "dev", "cluster", "down", "--dir", str(directory)],
                          capture_output=True, text=True, timeout=UP_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cluster down failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def build_apicheck_archive(out_dir: Path) -> Path:
    """An image whose only file is the static test/support/apicheck binary (see its main.go)."""
    rootfs = out_dir / "apicheck-rootfs"
    rootfs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOWORK="off", GOFLAGS="-mod=mod")
    subprocess.run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(rootfs / "apicheck"), "."],
                   cwd=APICHECK_SRC, env=env, check=True, capture_output=True, timeout=600)
    layer = write_layer(rootfs, out_dir / "apicheck-layer.tar.gz", owner=(0, 0))
    archive = out_dir / "apicheck.tar"
    write_image(archive, APICHECK_IMAGE, [layer], ImageConfig(entrypoint=("/apicheck",), user="65534:65534"))
    return archive
