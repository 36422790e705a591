"""The operator's environment and flags: clear errors naming what is wrong."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sriovop.commands.operator import Duration, command
from sriovop.operator.settings import OperatorSettings, OperatorSettingsError, stale_delay_minutes


def test_settings_from_env() -> None:
    s = OperatorSettings.from_env(None, {"NAMESPACE": "sriov", "RESOURCE_PREFIX": "example.com", "DEV_MODE": "TRUE",
                                         "STALE_NODE_STATE_CLEANUP_DELAY_MINUTES": "0"})
    assert (s.namespace, s.resource_prefix, s.dev_mode, s.stale_node_state_cleanup_delay_minutes) == (
        "sriov", "example.com", True, 0)
    assert s.render.namespace == "sriov" and s.render.resource_prefix == "example.com"
    assert OperatorSettings.from_env("flag-ns", {"NAMESPACE": "env-ns", "RESOURCE_PREFIX": "x"}).namespace == "flag-ns"


@pytest.mark.parametrize(("env", "message"), [
    ({"NAMESPACE": "ns"}, "RESOURCE_PREFIX is empty"),
    ({"NAMESPACE": "ns", "RESOURCE_PREFIX": ""}, "RESOURCE_PREFIX is empty"),
    ({"RESOURCE_PREFIX": "x"}, "pass --namespace or set NAMESPACE"),
    ({"NAMESPACE": "ns", "RESOURCE_PREFIX": "x", "OPERATOR_WEBHOOK_NETWORK_POLICY_PORT": "http"},
     "OPERATOR_WEBHOOK_NETWORK_POLICY_PORT"),
])
def test_bad_environment_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(OperatorSettingsError, match=message):
        OperatorSettings.from_env(None, env)


@pytest.mark.parametrize(("raw", "want"), [("", 30), ("45", 45), ("0", 0), ("-3", 30), ("soon", 30)])
def test_stale_delay_falls_back_to_30(raw: str, want: int) -> None:
    assert stale_delay_minutes({"STALE_NODE_STATE_CLEANUP_DELAY_MINUTES": raw}) == want


@pytest.mark.parametrize(("raw", "seconds"), [("15", 15.0), ("15s", 15.0), ("500ms", 0.5), ("2m", 120.0),
                                              (" 1.5s ", 1.5)])
def test_duration_flag(raw: str, seconds: float) -> None:
    assert Duration().convert(raw, None, None) == seconds


def test_cli_rejects_bad_durations_and_empty_prefix() -> None:
    runner = CliRunner()
    result = runner.invoke(command, ["--leader-election-lease-duration", "soon"], env={"NAMESPACE": "ns"})
    assert result.exit_code == 2 and "is not a duration" in result.output
    result = runner.invoke(command, [], env={"NAMESPACE": "ns", "RESOURCE_PREFIX": ""})
    assert result.exit_code == 1 and "RESOURCE_PREFIX is empty" in result.output
    result = runner.invoke(command, ["--leader-elect", "--leader-election-lease-duration", "5s",
                                     "--leader-election-renew-deadline", "10s"],
                           env={"NAMESPACE": "ns", "RESOURCE_PREFIX": "x"})
    assert result.exit_code == 2 and "lease_duration" in result.output
