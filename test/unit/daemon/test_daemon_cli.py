"""`sriovop config-daemon` flag validation: bad input fails at once, naming the flag and the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop.cli import main
from sriovop.commands.config_daemon import simulated_root
from sriovop.host.paths import SIM_DIR, SIM_ENDPOINT_FILE, HostPaths
from sriovop.host.steps import CRASH_ENV


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


def test_simulated_host_under_the_host_mount_resolves_its_namespace_there(tmp_path: Path) -> None:
    """A daemon pod sees the machine at /host: the simulator's root and namespace are found under it."""
    machine_root = "/var/lib/sriovop-sim/node-2"
    mounted = tmp_path / "host" / machine_root.lstrip("/")
    (mounted / SIM_DIR).mkdir(parents=True)
    (mounted / SIM_DIR / SIM_ENDPOINT_FILE).write_text(
        json.dumps({"socket": "@sim", "netns": "sriovop-sim-1", "root": machine_root}))
    assert simulated_root(tmp_path / "host", machine_root) == mounted
    assert HostPaths.at(mounted).sim_info() == {
        "socket": "@sim", "root": machine_root, "netns": str(tmp_path / "host" / "var/run/netns/sriovop-sim-1")}
    # The daemon running on the machine itself (its root is the simulator's own) keeps the plain name.
    own = tmp_path / "own"
    (own / SIM_DIR).mkdir(parents=True)
    (own / SIM_DIR / SIM_ENDPOINT_FILE).write_text(json.dumps({"netns": "n", "root": str(own.resolve())}))
    assert HostPaths.at(own).sim_info() == {"netns": "n", "root": str(own.resolve())}
    assert simulated_root(tmp_path, "") == tmp_path
