"""The background process behind `sriovop dev cluster up`.

It owns every process of the cluster (they die with it through PR_SET_PDEATHSIG) and stops them on
SIGTERM, so `down` only has to signal one pid. With --nodes N it also runs the nodes and, on the way
out, removes what they leave on the host (teardown.cleanup). With --vm-nodes 1 it boots the QEMU guest
once the host nodes are Ready, joins it as the last node and stops it on the way out (guestnodes.py).
`sriovop dev cluster restart-kubelet` asks it to restart one node's kubelet by creating
`nodes/<node>/restart-kubelet`; the file is removed when done (its content replaced by an error
message if the restart failed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from sriovop.devcluster.audit import AUDIT_LOG, audit_args
from sriovop.devcluster.controlplane import ControlPlane
from sriovop.devcluster.guestnodes import GuestNodes
from sriovop.devcluster.nodecluster import NodeCluster
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config


def _pause_image() -> list[Path]:
    from sriovop.devcluster.images.pause import ensure_pause_archive

    return [ensure_pause_archive()]


RESTART_KUBELET_REQUEST = "restart-kubelet"


def _restart_requested_kubelets(cluster: NodeCluster) -> None:
    for node in list(cluster.nodes):
        request = cluster.dir / "nodes" / node.net.name / RESTART_KUBELET_REQUEST
        if not request.exists():
            continue
        try:
            cluster.restart_kubelet(node.net.name)
        except Exception as exc:  # reported to the waiting command through the request file
            request.write_text(f"error: {exc}")
            continue
        request.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sriovop-dev-cluster-supervisor")
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--nodes", type=int, default=0)
    parser.add_argument("--audit-policy", type=Path, default=None)
    parser.add_argument("--vm-nodes", type=int, default=0)
    parser.add_argument("--vm-image", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    directory: Path = args.dir
    extra = audit_args(directory, args.audit_policy) if args.audit_policy is not None else []
    for stale in ("etcd-data", "pki", "users", "state.json", "ready", "vm", AUDIT_LOG):
        path = directory / stale
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    stop = threading.Event()
    joining = threading.Event()

    def on_signal(*_: object) -> None:
        stop.set()
        if joining.is_set():  # a guest's join takes minutes under TCG: `down` must not wait for it
            raise SystemExit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    dead: Callable[[], str | None]
    guests = GuestNodes(directory, args.vm_nodes, args.vm_image)
    if args.nodes > 0:
        cluster = NodeCluster(directory, args.nodes, images=_pause_image, extra_apiserver_args=extra)

        def stopper() -> None:
            try:
                guests.stop()
            finally:
                cluster.stop()

        def dead() -> str | None:
            return cluster.dead() or guests.dead()
    else:
        cp = ControlPlane(directory, extra_apiserver_args=extra)
        stopper = cp.stop

        def dead() -> str | None:
            for name, proc in (("etcd", cp.etcd), ("kube-apiserver", cp.apiserver)):
                if proc is not None and proc.poll() is not None:
                    return f"{name} exited with code {proc.returncode}"
            return None
    try:
        if args.nodes > 0:
            cluster.start()
            url = cluster.control_plane.url
            if args.vm_nodes and not stop.is_set():
                joining.set()
                guests.start(Client(load_config(cluster.kubeconfig)), cluster.network.kubernetes_service_ip)
                joining.clear()
        else:
            cp.start()
            url = cp.url
        (directory / "ready").write_text(json.dumps({"url": url, "kubeconfig": str(directory / "kubeconfig")}))
        while not stop.wait(1.0):
            if args.nodes > 0:
                _restart_requested_kubelets(cluster)
            if (failure := dead()) is not None:
                print(f"{failure}; stopping", file=sys.stderr)
                stop.set()
    finally:
        stopper()
        (directory / "ready").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
