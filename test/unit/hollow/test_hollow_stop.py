"""`sriovop dev hollow-nodes --stop` when the API server is gone: the hosts are still removed, the
command fails naming what is left (the Node objects) instead of a traceback, and the record stays so
a later --stop can finish. (No cluster: the kubeconfig points at a port nobody listens on.)"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from sriovop import cli
from sriovop.hollow.fleet import FLEET_LABEL
from sriovop.hollow.supervisor import STATE_FILE
from sriovop.hollow.worker import HOSTS_DIR


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_stop_without_an_api_server_says_the_nodes_are_left(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{_closed_port()}",
                                                "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    fleet = tmp_path / "fleet"
    (fleet / HOSTS_DIR / "hollow-00000").mkdir(parents=True)
    (fleet / STATE_FILE).write_text(json.dumps({"prefix": "hollow", "kubeconfig": str(kubeconfig), "pids": []}))
    result = CliRunner().invoke(cli.main, ["dev", "hollow-nodes", "--dir", str(fleet), "--stop"], prog_name="sriovop")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"Node objects (label {FLEET_LABEL}=hollow) could not be deleted" in result.output
    assert not (fleet / HOSTS_DIR).exists()
    assert (fleet / STATE_FILE).exists()
