"""The simulator's endpoint file: how other processes find a running simulated host, and its namespace
as seen from inside a pod's host mount. Host: none (files under a temporary directory)."""

from __future__ import annotations

import json
from pathlib import Path

from sriovop.sim.endpoint import (
    endpoint_path,
    is_simulated_tree,
    read_endpoint,
    remove_endpoint,
    write_endpoint,
)


def test_written_endpoint_is_read_back_and_removed(tmp_path: Path) -> None:
    assert read_endpoint(tmp_path) is None and not is_simulated_tree(tmp_path)
    write_endpoint(tmp_path, "@sock", "ns-1")
    assert is_simulated_tree(tmp_path)
    assert read_endpoint(tmp_path) == {"socket": "@sock", "netns": "ns-1", "root": str(tmp_path.resolve())}
    remove_endpoint(tmp_path)
    assert read_endpoint(tmp_path) is None
    assert is_simulated_tree(tmp_path)  # a stopped simulator's tree is still a simulated tree


def test_endpoint_without_a_root_is_taken_as_written(tmp_path: Path) -> None:
    endpoint_path(tmp_path).parent.mkdir()
    endpoint_path(tmp_path).write_text(json.dumps({"socket": "@x", "netns": "ns"}))
    assert read_endpoint(tmp_path) == {"socket": "@x", "netns": "ns"}
    endpoint_path(tmp_path).write_text(json.dumps(["not", "an", "object"]))
    assert read_endpoint(tmp_path) is None


def test_namespace_under_a_host_mount_is_the_mounted_file(tmp_path: Path) -> None:
    """A daemon pod sees the machine at /host: the simulator's namespace is found under that mount."""
    machine_root = "/var/lib/sriovop-sim/node-2"
    mounted = tmp_path / "host" / machine_root.lstrip("/")
    endpoint_path(mounted).parent.mkdir(parents=True)
    endpoint_path(mounted).write_text(json.dumps({"socket": "@sim", "netns": "sriovop-sim-1", "root": machine_root}))
    assert read_endpoint(mounted) == {
        "socket": "@sim", "root": machine_root, "netns": str(tmp_path / "host" / "var/run/netns/sriovop-sim-1")}
