"""`sriovop config-daemon` flag validation: bad input fails at once, naming the flag and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop.cli import main
from sriovop.commands.config_daemon import simulated_root
from sriovop.host.steps import CRASH_ENV
from sriovop.sim.endpoint import write_endpoint


@pytest.mark.parametrize(("args", "env", "message"), [
    ([], {}, "--node-name is required"),
    (["--node-name", "n", "--disable-plugins", "intel"], {}, "only 'mellanox' can be disabled"),
    (["--node-name", "n", "--requeue-after", "0"], {}, "must be greater than zero"),
    (["--node-name", "n", "--metrics-bind-address", "nonsense"], {}, "expected host:port"),
    (["--node-name", "n"], {CRASH_ENV: "no-such-step"}, "unknown step"),
    (["--node-name", "n", "--kubeconfig", "/nonexistent/kubeconfig"], {}, "does not exist"),
    (["--node-name", "n"], {"SRIOVOP_SIMULATED_HOST": "var/lib/sim"}, "is not a running simulated host"),
])
def test_bad_input_is_rejected(tmp_path: Path, args: list[str], env: dict[str, str], message: str,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    result = CliRunner().invoke(main, ["config-daemon", "--host-root", str(tmp_path), *args], env=env)
    assert result.exit_code != 0
    assert message in result.output, result.output


def test_missing_host_root_is_rejected(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["config-daemon", "--node-name", "n", "--host-root", str(tmp_path / "x")])
    assert result.exit_code != 0 and "is not a directory" in result.output


def test_node_name_from_environment(tmp_path: Path) -> None:
    # NODE_NAME satisfies the requirement; the run then stops at the (missing) kubeconfig.
    result = CliRunner().invoke(main, ["config-daemon", "--host-root", str(tmp_path), "--kubeconfig",
                                       str(tmp_path / "none")], env={"NODE_NAME": "from-env"})
    assert "--node-name is required" not in result.output and "does not exist" in result.output


@pytest.mark.parametrize(("flags", "parallel"), [([], False), (["--parallel-nic-config"], True)])
def test_parallel_nic_config_flag_reaches_the_applier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      flags: list[str], parallel: bool) -> None:
    """The operator renders --parallel-nic-config with the parallelNicConfig gate; the daemon honours it."""
    import sriovop.daemon.app as app

    seen: list[object] = []

    class FakeDaemon:
        def __init__(self, settings: object, *_args: object, **_kw: object) -> None:
            seen.append(settings)

        def run(self, _stop: object) -> None:
            return None

    monkeypatch.setattr(app, "Daemon", FakeDaemon)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "users: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    result = CliRunner().invoke(main, ["config-daemon", "--node-name", "n", "--host-root", str(tmp_path),
                                       "--kubeconfig", str(kubeconfig), *flags])
    assert result.exit_code == 0, result.output
    assert "not implemented" not in result.output
    assert len(seen) == 1 and seen[0].apply_options.parallel is parallel  # type: ignore[attr-defined]


def test_simulated_host_under_the_host_mount_is_the_daemons_root(tmp_path: Path) -> None:
    """$SRIOVOP_SIMULATED_HOST (the dev cluster's daemon pods): a running simulator's root under the host mount."""
    machine_root = "/var/lib/sriovop-sim/node-2"
    mounted = tmp_path / "host" / machine_root.lstrip("/")
    write_endpoint(mounted, "@sim", "sriovop-sim-1")
    assert simulated_root(tmp_path / "host", machine_root) == mounted
    assert simulated_root(tmp_path, "") == tmp_path


@pytest.mark.parametrize("argv", [
    ["config-daemon", "--node-name", "n", "--host-root", "{root}"],
    ["config-daemon", "--host-root", "{root}", "service", "--phase", "pre"],
    ["device-plugin", "--host-root", "{root}"],
    ["metrics-exporter", "--path.sysbuspci", "{root}/sys/bus/pci/devices"],
    ["cni-server", "--host-root", "{root}", "--socket-dir", "{root}/sockets"],
])
def test_simulated_tree_without_the_flag_is_refused(tmp_path: Path, argv: list[str]) -> None:
    """Driven as a real host, a simulated tree would take plain file writes: the command names the flag."""
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    write_endpoint(tmp_path, "@sim", "ns")
    result = CliRunner().invoke(main, [a.format(root=tmp_path) for a in argv])
    assert result.exit_code != 0
    assert "is a simulated SR-IOV host's root: pass --simulated-host" in result.output, result.output
