"""Which netns path the attach handler gives its delegates (sriovop.cni.attach.serve.netns_path).
Host: this machine's filesystem only (files stand in for namespaces: the check is on device and inode)."""

from __future__ import annotations

import os
from pathlib import Path

from sriovop.cni.attach.serve import netns_path


def test_the_runtime_path_when_it_is_the_namespace_that_came_with_the_request(tmp_path: Path) -> None:
    ns, other = tmp_path / "cni-a", tmp_path / "cni-b"
    ns.write_text("")
    other.write_text("")
    fd = os.open(ns, os.O_RDONLY)
    try:
        assert netns_path(fd, str(ns)) == str(ns)
        # A path naming another namespace, or one this process cannot see, is not trusted.
        assert netns_path(fd, str(other)) == f"/proc/{os.getpid()}/fd/{fd}"
        assert netns_path(fd, str(tmp_path / "absent")) == f"/proc/{os.getpid()}/fd/{fd}"
        assert netns_path(fd, "") == f"/proc/{os.getpid()}/fd/{fd}"
    finally:
        os.close(fd)
    assert netns_path(None, str(ns)) is None
