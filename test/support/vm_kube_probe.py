"""Runs INSIDE the e2e guest: a long-lived client of the host's kube-apiserver through the guest forward.

Stands in for the config daemon's API side until it exists, using sriovop's own runtime client (the
one the daemon will use): prints the server's /version, creates a ConfigMap named after the guest's
hostname, then polls it until the host side writes `data.reply`, echoes that, and keeps running until
SIGTERM (how GuestVM stops a daemon), which it acknowledges before exiting 0.

Usage (in the guest): python vm_kube_probe.py KUBECONFIG NAMESPACE
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
from types import FrameType

from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import CONFIG_MAP


def main() -> int:
    kubeconfig, namespace = sys.argv[1], sys.argv[2]
    stop = threading.Event()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    client = Client(load_config(kubeconfig))
    version = json.loads(client.request("GET", "/version").data)
    print("PROBE-VERSION " + json.dumps(version), flush=True)
    name = socket.gethostname()
    client.create(CONFIG_MAP, {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name, "namespace": namespace},
                               "data": {"from": "guest"}}, namespace=namespace)
    print(f"PROBE-CREATED {namespace}/{name}", flush=True)
    replied = False
    while not stop.wait(0.5):
        if replied:
            continue
        try:
            cm = client.get(CONFIG_MAP, name, namespace)
        except NotFound:
            continue
        reply = cm.get("data", {}).get("reply")
        if reply:
            print(f"PROBE-REPLY {reply}", flush=True)
            replied = True
    print("PROBE-TERMINATED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
