"""`sriovop dev hollow-nodes` when the API server is gone, by either way out (`--stop`, or the running
fleet's own stop): the hosts are still removed, the command exits NO_ANSWER (the cluster unreachable)
naming what is left (the Node objects) instead of a traceback, and the record stays so a later --stop
can finish. (No cluster: the kubeconfig points at a port nobody listens on.)"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sriovop import cli
from sriovop.exitcodes import NO_ANSWER
from sriovop.hollow.fleet import FLEET_LABEL
from sriovop.hollow.supervisor import STATE_FILE
from sriovop.hollow.worker import HOSTS_DIR
from test.support.unreachable import unreachable_kubeconfig


def test_stop_without_an_api_server_says_the_nodes_are_left(tmp_path: Path) -> None:
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    fleet = tmp_path / "fleet"
    (fleet / HOSTS_DIR / "hollow-00000").mkdir(parents=True)
    (fleet / STATE_FILE).write_text(json.dumps({"prefix": "hollow", "kubeconfig": str(kubeconfig), "pids": []}))
    result = CliRunner().invoke(cli.main, ["dev", "hollow-nodes", "--dir", str(fleet), "--stop"], prog_name="sriovop")
    assert result.exit_code == NO_ANSWER, result.output
    assert "Traceback" not in result.output
    assert f"Node objects (label {FLEET_LABEL}=hollow) could not be deleted" in result.output
    assert not (fleet / HOSTS_DIR).exists()
    assert (fleet / STATE_FILE).exists()


def test_a_fleet_that_cannot_reach_the_api_server_stops_without_a_traceback(tmp_path: Path) -> None:
    """The running path: registering the Nodes fails, the fleet's own stop cannot delete them either.
    Both are said (the cause first), the exit is NO_ANSWER, and the record is kept for --stop."""
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    fleet = tmp_path / "fleet"
    result = CliRunner().invoke(cli.main, ["dev", "hollow-nodes", "--dir", str(fleet), "--count", "2",
                                           "--kubeconfig", str(kubeconfig)], prog_name="sriovop")
    assert result.exit_code == NO_ANSWER, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    message = result.output.split("Error: ", 1)[1]
    assert message.startswith("the API server did not answer: "), result.output
    assert f"Node objects (label {FLEET_LABEL}=hollow) could not be deleted" in message
    assert json.loads((fleet / STATE_FILE).read_text())["count"] == 2
