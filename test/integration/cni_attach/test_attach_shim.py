"""The attach plugin reached the way a runtime reaches it: the static shim (built from images/cni-shim)
named `sriovop-attach`, its unix socket, `sriovop.cni.server` with the registered `sriovop-attach`
handler, and delegate plugins (fake executables recording their calls).

Host: this machine (the shim passes this process's network namespace as a descriptor; the fake
plugins do not enter it). No cluster: CNI_ARGS names no pod, so only the default network runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from sriovop.cni.server import CniServer, ServerOptions, load_handlers
from sriovop.devcluster.cnishim import shim_binary
from test.support.cni_fakeplugin import PluginDir
from test.support.poll import wait_for


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    sockets = tmp_path / "sock"
    with CniServer(sockets, load_handlers(["sriovop-attach"], ServerOptions(state_dir=tmp_path / "state"))):
        yield sockets


def _run(shim: Path, sockets: Path, plugins: PluginDir, command: str, stdin: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "SRIOVOP_CNI_SOCKET_DIR": str(sockets), "CNI_COMMAND": command,
           "CNI_CONTAINERID": "shimtest", "CNI_NETNS": "/proc/self/ns/net", "CNI_IFNAME": "eth0",
           "CNI_PATH": str(plugins.bin), "CNI_ARGS": "IgnoreUnknown=true"}
    return subprocess.run([str(shim)], input=stdin, env=env, capture_output=True, text=True, timeout=120, check=False)


def _attach_setup(tmp_path: Path) -> tuple[PluginDir, Path, str]:
    """The shim installed as `sriovop-attach`, a fake delegate, and a configuration naming it."""
    plugins = PluginDir(tmp_path)
    plugins.install("bridgeish")
    shim = plugins.bin / "sriovop-attach"
    shutil.copy(shim_binary(), shim)
    default = {"cniVersion": "1.0.0", "name": "podnet",
               "plugins": [{"type": "bridgeish", "log": str(plugins.log), "address": "10.88.0.9/24"}]}
    conf = json.dumps({"cniVersion": "1.0.0", "name": "sriovop-attach-network", "type": "sriovop-attach",
                       "delegates": [default], "cacheDir": str(tmp_path / "cache")})
    return plugins, shim, conf


def test_add_and_del_through_the_shim_and_server(served: Path, tmp_path: Path) -> None:
    plugins, shim, conf = _attach_setup(tmp_path)

    added = _run(shim, served, plugins, "ADD", conf)
    assert added.returncode == 0, added.stdout + added.stderr
    result = json.loads(added.stdout)
    assert result["ips"] == [{"address": "10.88.0.9/24", "interface": 0}]
    assert result["interfaces"][0]["sandbox"] == "/proc/self/ns/net"  # the runtime's path, not our descriptor
    [call] = plugins.calls()
    netns = call["env"]["CNI_NETNS"]
    # The runtime's path is the very namespace the shim sent (checked on the descriptor), so the
    # delegate gets that path: unlike /proc/<server>/fd/N it stays true after the request.
    assert netns == "/proc/self/ns/net"
    assert (tmp_path / "cache" / "shimtest").exists()

    deleted = _run(shim, served, plugins, "DEL", conf)
    assert (deleted.returncode, deleted.stdout) == (0, ""), deleted.stderr
    assert [c["command"] for c in plugins.calls()] == ["ADD", "DEL"]
    assert not (tmp_path / "cache" / "shimtest").exists()

    failed = _run(shim, served, plugins, "ADD", conf.replace('"bridgeish"', '"absent"'))
    assert failed.returncode == 1
    assert "default network (interface eth0): plugin 'absent' not found" in json.loads(failed.stdout)["msg"]


def test_the_server_logs_each_command_as_its_event_with_its_duration(served: Path, tmp_path: Path) -> None:
    """`cni_add` / `cni_del` events with `duration_ms`: what `make e2e-node` reads from the guest's pod logs."""
    from structlog.testing import capture_logs

    plugins, shim, conf = _attach_setup(tmp_path)

    def cni_events() -> list[MutableMapping[str, Any]]:
        return [e for e in logs if e.get("plugin") == "sriovop-attach" and str(e["event"]).startswith("cni_")]

    with capture_logs() as logs:
        assert _run(shim, served, plugins, "ADD", conf).returncode == 0
        assert _run(shim, served, plugins, "DEL", conf).returncode == 0
        # The server logs a command once its answer is sent, so the shim may return first.
        wait_for(lambda: len(cni_events()) >= 2, timeout=60.0, what="the server's cni_add and cni_del events")
    events = cni_events()
    # Each is logged by its own connection's thread, after its answer: their order in the log is free.
    assert sorted((e["event"], e["command"], e["exit_code"]) for e in events) == [("cni_add", "ADD", 0),
                                                                                  ("cni_del", "DEL", 0)], logs
    assert all(isinstance(e["duration_ms"], float) and e["duration_ms"] >= 0 for e in events), events
