"""`sriovop device-plugin`'s command line (host: none): upstream's integer glog levels are accepted, an
unreadable or invalid config ends the process with the reason, and the operator's rendered arguments parse."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sriovop.commands.device_plugin import command, log_level
from sriovop.render.settings import RenderSettings
from sriovop.render.workloads import device_plugin_daemonset


@pytest.mark.parametrize(("value", "level"), [("10", "debug"), ("2", "debug"), ("1", "info"), ("0", "info"),
                                              ("info", "info"), ("DEBUG", "debug")])
def test_log_levels(value: str, level: str) -> None:
    assert log_level(value) == level


@pytest.mark.parametrize("value", ["-1", "loud"])
def test_bad_log_levels_are_refused(value: str) -> None:
    with pytest.raises(click.BadParameter) as info:
        log_level(value)
    assert info.value.param_hint == "--log-level" and repr(value) in info.value.message


def test_the_operators_arguments_are_accepted(tmp_path: Path) -> None:
    """The DaemonSet's args (with $(NODE_NAME) expanded by the kubelet), pointed at a missing config file:
    the flags parse, and the missing file is the error."""
    settings = RenderSettings(namespace="sriov-network-operator", resource_prefix="openshift.io",
                              device_plugin_image="i", config_daemon_image="d")
    ds = device_plugin_daemonset(settings, {"spec": {"useCDI": True}})
    args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
    args = [a.replace("/etc/pcidp/$(NODE_NAME)", str(tmp_path / "missing")) for a in args]
    assert "--log-level=10" in args and "--use-cdi" in args
    result = CliRunner().invoke(command, [*args, f"--host-root={tmp_path}", f"--cdi-dir={tmp_path / 'cdi'}",
                                          f"--device-plugin-dir={tmp_path / 'dp'}"])
    assert result.exit_code == 1
    assert f"cannot read {tmp_path / 'missing'}" in result.output


def test_an_invalid_config_ends_the_process_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"resourceList": [{"resourceName": "a"}, {"resourceName": "a"}]}')
    result = CliRunner().invoke(command, [f"--config-file={config}", f"--host-root={tmp_path}",
                                          f"--device-plugin-dir={tmp_path / 'dp'}"])
    assert result.exit_code == 1
    assert "resourceList[1].resourceName: duplicate resource intel.com/a (also resourceList[0])" in result.output
