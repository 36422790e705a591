"""Import image archives into every node of a local cluster (one containerd per node, no registry).

A development cluster directory holds one containerd socket per node at DIR/nodes/<node>/containerd.sock;
each archive is imported with `ctr -n k8s.io images import` (the namespace the kubelet's CRI uses), so
pods that name the image with `imagePullPolicy: IfNotPresent` or `Never` start without a pull.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sriovop.devcluster.images.oci import ANNOTATION_CONTAINERD_NAME

CRI_NAMESPACE = "k8s.io"
IMPORT_TIMEOUT_S = 600.0


class LoadError(RuntimeError):
    """Nothing to load into, nothing to load, or an import failed; the message says which and where."""


def node_sockets(cluster_dir: Path) -> dict[str, Path]:
    """node name -> containerd socket, for every node directory that has one."""
    return {sock.parent.name: sock for sock in sorted((cluster_dir / "nodes").glob("*/containerd.sock"))}


def archives_in(directory: Path) -> list[Path]:
    found = sorted(directory.glob("*.tar"))
    if not found:
        raise LoadError(f"--images {directory}: no *.tar image archives there (run `make images` first)")
    return found


def archive_image(archive: Path) -> tuple[str, str]:
    """(image name, manifest digest) as the archive's index.json states them."""
    try:
        with tarfile.open(archive) as tar:
            fh = tar.extractfile("index.json")
            assert fh is not None
            [entry] = json.load(fh)["manifests"]
        return entry["annotations"][ANNOTATION_CONTAINERD_NAME], entry["digest"]
    except (tarfile.TarError, KeyError, ValueError, AssertionError) as exc:
        raise LoadError(f"archives: {archive} is not a one-image OCI archive with a name ({exc})") from None


def _ctr(ctr: str, sock: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [ctr, "--address", str(sock), "-n", CRI_NAMESPACE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S, check=False)


def _present(ctr: str, node: str, sock: Path) -> dict[str, str]:
    """image name -> manifest digest already in the node's containerd."""
    proc = _ctr(ctr, sock, "images", "ls")
    if proc.returncode != 0:
        raise LoadError(f"node {node}: listing images through {sock} failed ({proc.returncode}): "
                        f"{(proc.stderr or proc.stdout).strip()}")
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    return {row[0]: row[2] for row in rows if len(row) >= 3}


def _load_node(ctr: str, node: str, sock: Path, archives: Sequence[Path],
               say: Callable[[str], None]) -> list[str]:
    present = _present(ctr, node, sock)
    for archive in archives:
        name, digest = archive_image(archive)
        if present.get(name) == digest:
            say(f"{node}: {name} is already there")
            continue
        say(f"{node}: importing {archive.name} ({name})")
        proc = _ctr(ctr, sock, "images", "import", str(archive))
        if proc.returncode != 0:
            raise LoadError(f"node {node}: importing {archive} through {sock} failed ({proc.returncode}): "
                            f"{(proc.stderr or proc.stdout).strip()}")
    return [a.name for a in archives]


def load_archives(cluster_dir: Path, archives: Sequence[Path],
                  say: Callable[[str], None] | None = None) -> dict[str, list[str]]:
    """Make every archive's image present in every node's containerd; return node -> archive names.

    An image whose name already points at the archive's manifest is skipped (a warm load costs a
    listing per node); nodes are loaded in parallel, since each has its own containerd.
    """
    nodes = node_sockets(cluster_dir)
    if not nodes:
        raise LoadError(
            f"--dir {cluster_dir}: the cluster has no nodes (no nodes/*/containerd.sock); start one with "
            f"`sriovop dev cluster up --dir {cluster_dir} --nodes 1`"
        )
    if not archives:
        raise LoadError("archives: none given (run `make images` to build build/images/*.tar)")
    missing = [str(a) for a in archives if not a.is_file()]
    if missing:
        raise LoadError(f"archives: not found: {', '.join(missing)}")
    ctr = shutil.which("ctr")
    if ctr is None:
        raise LoadError("ctr is not on PATH: it comes with containerd (hack/install-deps.sh installs it)")
    report = say or (lambda _message: None)
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        futures = {node: pool.submit(_load_node, ctr, node, sock, archives, report) for node, sock in nodes.items()}
        return {node: future.result() for node, future in futures.items()}
