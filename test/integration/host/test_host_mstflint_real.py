"""The real Mellanox firmware tools (Debian's mstflint, installed by hack/install-deps.sh and carried by the
config-daemon image): present, callable, and their failures reach the daemon as clear errors.

No Mellanox NIC exists on this machine, so each tool is run far enough to answer for a device that is not
there; the plugin's decisions are covered with the fake mstconfig in test_host_plugins.py.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from sriovop.host.plugins.mstconfig import Mstconfig, MstconfigError, Mstfwreset

ABSENT = "0000:ff:1f.7"


@pytest.mark.parametrize("tool", ["mstconfig", "mstfwreset", "mstflint"])
def test_the_tools_are_installed_and_report_their_version(tool: str) -> None:
    path = shutil.which(tool)
    assert path is not None, f"{tool} is not on PATH: hack/install-deps.sh installs the mstflint package"
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "mstflint" in done.stdout + done.stderr


def test_mstconfig_query_of_an_absent_device_is_an_error_naming_the_command() -> None:
    with pytest.raises(MstconfigError) as err:
        Mstconfig().query(ABSENT)
    message = str(err.value)
    assert f"mstconfig -d {ABSENT} q failed (3)" in message
    assert "Failed to open the device" in message


def test_mstfwreset_of_an_absent_device_fails_cleanly() -> None:
    with pytest.raises(MstconfigError) as err:
        Mstfwreset().reset(ABSENT)
    message = str(err.value)
    assert message.startswith(f"mstfwreset -d {ABSENT} --skip_driver -l 3 -y reset failed (1): -E- ")
    # On a virtual machine (this one) it refuses before looking for the device; on metal the device is missing.
    assert "not supported on virtual machines" in message or "device" in message.lower()
