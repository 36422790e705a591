"""Where the control-plane binaries come from: the cache that hack/build-control-plane.sh fills."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_K8S_VERSION = "v1.35.4"


@dataclass(frozen=True)
class ControlPlaneBinaries:
    kube_apiserver: Path
    etcd: Path


def cache_dir(k8s_version: str = DEFAULT_K8S_VERSION) -> Path:
    explicit = os.environ.get("SRIOVOP_CONTROL_PLANE_DIR")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sriovop" / "control-plane" / k8s_version


def _build_script() -> Path | None:
    script = Path(__file__).resolve().parents[2] / "hack" / "build-control-plane.sh"
    return script if script.is_file() else None


def find_binaries(build: bool = True, k8s_version: str = DEFAULT_K8S_VERSION) -> ControlPlaneBinaries:
    """Return cached binaries, building them first when allowed and a source checkout is at hand."""
    directory = cache_dir(k8s_version)
    found = ControlPlaneBinaries(directory / "kube-apiserver", directory / "etcd")
    if (directory / ".complete").exists() and all(os.access(p, os.X_OK) for p in vars(found).values()):
        return found
    script = _build_script()
    if not build or script is None:
        raise FileNotFoundError(
            f"kube-apiserver and etcd are not built in {directory}; run hack/build-control-plane.sh "
            "from a sriovop checkout (or point SRIOVOP_CONTROL_PLANE_DIR at a directory holding both)"
        )
    env = dict(os.environ, K8S_VERSION=k8s_version)
    subprocess.run(["bash", str(script)], check=True, env=env, stdout=subprocess.DEVNULL)
    return find_binaries(build=False, k8s_version=k8s_version)
