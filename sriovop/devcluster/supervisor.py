"""The background process behind `sriovop dev cluster up`.

It owns etcd and kube-apiserver (they die with it through PR_SET_PDEATHSIG) and stops them on SIGTERM,
so `down` only has to signal one pid.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import threading
from pathlib import Path

from sriovop.devcluster.controlplane import ControlPlane


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sriovop-dev-cluster-supervisor")
    parser.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args(argv)
    directory: Path = args.dir
    for stale in ("etcd-data", "pki", "users", "state.json", "ready"):
        path = directory / stale
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    cp = ControlPlane(directory)
    try:
        cp.start()
        (directory / "ready").write_text(json.dumps({"url": cp.url, "kubeconfig": str(cp.kubeconfig)}))
        while not stop.wait(1.0):
            for name, proc in (("etcd", cp.etcd), ("kube-apiserver", cp.apiserver)):
                if proc is not None and proc.poll() is not None:
                    print(f"{name} exited with code {proc.returncode}; stopping", file=sys.stderr)
                    stop.set()
    finally:
        cp.stop()
        (directory / "ready").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
