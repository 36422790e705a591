"""The static CNI shim (images/cni-shim): what sriovop's CNI image installs on a node's /opt/cni/bin.

Built like hack/pause (CGO_ENABLED=0, standard library, cached by source hash): the host needs no
Python or library to run it; it only forwards each invocation to `sriovop cni-server`.
"""

from __future__ import annotations

from pathlib import Path

from sriovop.devcluster.checkout import source_root
from sriovop.devcluster.images.gobuild import cached_binary


def shim_source() -> Path:
    return source_root() / "images" / "cni-shim"


def shim_binary() -> Path:
    """The built shim (at most one build per source version)."""
    return cached_binary(shim_source())
