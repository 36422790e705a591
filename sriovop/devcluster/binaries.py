"""Where the cluster binaries come from: the caches that hack/build-control-plane.sh and
hack/build-node-components.sh fill (built on first use from a source checkout)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sriovop.devcluster.checkout import source_root

DEFAULT_K8S_VERSION = "v1.35.4"


@dataclass(frozen=True)
class ControlPlaneBinaries:
    kube_apiserver: Path
    etcd: Path


@dataclass(frozen=True)
class NodeBinaries:
    kubelet: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    crictl: Path


def _cache(env: str, kind: str, k8s_version: str) -> Path:
    explicit = os.environ.get(env)
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sriovop" / kind / k8s_version


def cache_dir(k8s_version: str = DEFAULT_K8S_VERSION) -> Path:
    return _cache("SRIOVOP_CONTROL_PLANE_DIR", "control-plane", k8s_version)


def node_cache_dir(k8s_version: str = DEFAULT_K8S_VERSION) -> Path:
    return _cache("SRIOVOP_NODE_DIR", "node", k8s_version)


def _ensure_built(directory: Path, paths: list[Path], script_name: str, env_var: str, what: str,
                  build: bool, k8s_version: str) -> None:
    if (directory / ".complete").exists() and all(os.access(p, os.X_OK) for p in paths):
        return
    if not build:
        raise FileNotFoundError(
            f"{what} are not built in {directory}; run hack/{script_name} from a sriovop checkout "
            f"(or point {env_var} at a directory holding them)"
        )
    script = source_root() / "hack" / script_name  # NotASourceCheckout says how to name one
    env = dict(os.environ, K8S_VERSION=k8s_version)
    subprocess.run(["bash", str(script)], check=True, env=env, stdout=subprocess.DEVNULL)
    _ensure_built(directory, paths, script_name, env_var, what, False, k8s_version)


def find_binaries(build: bool = True, k8s_version: str = DEFAULT_K8S_VERSION) -> ControlPlaneBinaries:
    """Return cached kube-apiserver and etcd, building them first when allowed and a checkout is at hand."""
    directory = cache_dir(k8s_version)
    found = ControlPlaneBinaries(directory / "kube-apiserver", directory / "etcd")
    _ensure_built(directory, list(vars(found).values()), "build-control-plane.sh", "SRIOVOP_CONTROL_PLANE_DIR",
                  "kube-apiserver and etcd", build, k8s_version)
    return found


def find_node_binaries(build: bool = True, k8s_version: str = DEFAULT_K8S_VERSION) -> NodeBinaries:
    """Return cached kubelet, kube-controller-manager, kube-scheduler and crictl (built when allowed)."""
    directory = node_cache_dir(k8s_version)
    found = NodeBinaries(directory / "kubelet", directory / "kube-controller-manager",
                         directory / "kube-scheduler", directory / "crictl")
    _ensure_built(directory, list(vars(found).values()), "build-node-components.sh", "SRIOVOP_NODE_DIR",
                  "kubelet, kube-controller-manager, kube-scheduler and crictl", build, k8s_version)
    return found
