"""Settings validation, the live operator config, and status messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from sriovop.daemon.opconfig import OperatorConfigFollower
from sriovop.daemon.reboot import reboot_command
from sriovop.daemon.settings import DaemonSettings, LiveConfig
from sriovop.daemon.status import sync_status_message


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"node_name": ""}, "node name"),
    ({"namespace": ""}, "namespace"),
    ({"requeue_after": 0}, "requeue_after"),
    ({"retry_base_delay": -1}, "retry_base_delay"),
    ({"retry_base_delay": 5, "retry_max_delay": 1}, "retry_max_delay"),
])
def test_bad_settings_name_the_field(kwargs: dict, field: str) -> None:
    values = {"node_name": "n1", **kwargs}
    with pytest.raises(ValueError, match=field):
        DaemonSettings(**values)


def test_operator_config_follower() -> None:
    live = LiveConfig()
    levels: list[str] = []
    kicks: list[bool] = []
    f = OperatorConfigFollower(live, set_log_level=levels.append, on_change=lambda: kicks.append(True))
    f.on_add({"spec": {"logLevel": 2, "featureGates": {"parallelNicConfig": True}}}, True)
    assert levels == ["debug"] and not kicks and live.gate("parallelNicConfig")
    assert live.gate("blockDevicePluginUntilConfigured"), "unset gates take the upstream default"
    f.on_update({}, {"spec": {"logLevel": 2, "disableDrain": True}})
    assert live.disable_drain and kicks == [True] and levels == ["debug"]
    f.on_delete({"spec": {}})
    assert live.disable_drain, "a deleted config keeps its last values"
    f.on_update({}, {"spec": {"logLevel": "loud"}})
    assert live.log_level == "debug"


def test_sync_status_message() -> None:
    assert sync_status_message("", "InProgress", "") == "Status changed from: <none> to: InProgress"
    assert sync_status_message("InProgress", "Failed", "pf x: step y: z") == \
        "Status changed from: InProgress to: Failed. Last Error: pf x: step y: z"


def test_reboot_command_chroots_into_a_host_root() -> None:
    assert reboot_command(Path("/"))[0] == "systemd-run"
    cmd = reboot_command(Path("/host"))
    assert cmd[:3] == ["chroot", "/host", "systemd-run"] and "systemctl stop kubelet.service; reboot" in cmd
