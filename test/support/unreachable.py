"""A kubeconfig for tests of what a command does when the API server is gone.

It names an address on this machine that refuses connections (a port just bound and released, so
nothing listens there), with a token user and TLS verification off, so loading it succeeds and every
request fails with a refused connection, without a cluster or a timeout.
"""

from __future__ import annotations

import json
from pathlib import Path

from sriovop.devcluster.process import free_port


def unreachable_kubeconfig(path: Path) -> Path:
    """Write a kubeconfig at `path` whose only cluster refuses connections; return `path`."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}",
                                                "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path
