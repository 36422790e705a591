"""The hollow fleet's thread check, on a fake /proc: a fleet the kernel's task limits cannot hold is
refused before anything is registered, naming the setting; the `hollow-nodes` command exits
NO_ANSWER with that message and creates nothing. (No cluster, no kernel limits touched.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop import cli
from sriovop.exitcodes import NO_ANSWER
from sriovop.hollow import capacity
from sriovop.hollow.capacity import THREADS_PER_NODE, FleetTooLarge, check_threads, tasks_now


def _proc(tmp_path: Path, pid_max: int, threads_max: int, tasks: int) -> Path:
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "loadavg").write_text(f"0.50 0.40 0.30 2/{tasks} 12345\n")
    (proc / "sys" / "kernel" / "pid_max").write_text(f"{pid_max}\n")
    (proc / "sys" / "kernel" / "threads-max").write_text(f"{threads_max}\n")
    return proc


def test_tasks_now_reads_the_total_of_loadavg(tmp_path: Path) -> None:
    assert tasks_now(_proc(tmp_path, 32768, 96367, 4957)) == 4957


def test_a_fleet_within_both_limits_passes(tmp_path: Path) -> None:
    check_threads(2000, _proc(tmp_path, 32768, 96367, 500))  # 24,000 + 500 + headroom < 32,768


def test_a_fleet_past_pid_max_is_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(FleetTooLarge) as info:
        check_threads(5000, _proc(tmp_path, 32768, 96367, 114))
    message = str(info.value)
    assert message.startswith("count: 5000 hollow nodes need about 60000 threads")
    assert "kernel.pid_max is 32768" in message
    assert "sysctl -w kernel.pid_max=" in message


def test_threads_max_is_checked_as_well(tmp_path: Path) -> None:
    with pytest.raises(FleetTooLarge, match=r"kernel\.threads-max is 36000"):
        check_threads(3000, _proc(tmp_path, 4194304, 36000, 114))


def test_the_tasks_that_exist_count_against_the_limit(tmp_path: Path) -> None:
    count = 2000
    fits = count * THREADS_PER_NODE + capacity.HEADROOM + 100
    check_threads(count, _proc(tmp_path / "a", fits, 10**6, 100))
    with pytest.raises(FleetTooLarge):
        check_threads(count, _proc(tmp_path / "b", fits, 10**6, 101))


def test_the_command_refuses_before_registering_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _proc(tmp_path, 32768, 96367, 114)
    real = capacity.check_threads
    monkeypatch.setattr("sriovop.hollow.supervisor.check_threads", lambda count: real(count, fake))
    kubeconfig = tmp_path / "kubeconfig"  # never read: the check comes before any request
    kubeconfig.write_text('{"apiVersion": "v1", "kind": "Config", "current-context": "c", '
                          '"clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}], '
                          '"users": [{"name": "u", "user": {"token": "t"}}], '
                          '"contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}')
    fleet_dir = tmp_path / "fleet"
    result = CliRunner().invoke(cli.main, ["dev", "hollow-nodes", "--dir", str(fleet_dir), "--count", "5000",
                                           "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == NO_ANSWER, result.output
    assert "kernel.pid_max is 32768" in result.output
    assert not fleet_dir.exists()  # no record, no logs, no hosts
