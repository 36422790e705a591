"""`sriovop metrics-exporter` flag validation: bad input fails at once, naming the flag and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop.cli import main


@pytest.mark.parametrize(("args", "message"), [
    (["--path.sysbuspci=/tmp"], "must end in sys/bus/pci/devices"),
    (["--path.sysbuspci={root}/nothing/sys/bus/pci/devices"], "is not a directory"),
    (["--collector.vfstatspriority=ethtool"], "a comma list of netlink and/or sysfs"),
    (["--collector.kubepoddevice=maybe"], "expected true or false"),
    (["--web.listen-address=nonsense"], "expected host:port"),
])
def test_bad_input_is_rejected(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    base = [f"--path.sysbuspci={tmp_path}/sys/bus/pci/devices"]
    result = CliRunner().invoke(main, ["metrics-exporter", *base, *[a.format(root=tmp_path) for a in args]])
    assert result.exit_code != 0
    assert message in result.output, result.output
