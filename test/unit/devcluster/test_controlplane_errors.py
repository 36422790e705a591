"""Start-up failures name the component and show the tail of its log."""

from __future__ import annotations

from pathlib import Path

import pytest

from sriovop.devcluster import ControlPlane, ControlPlaneBinaries, ControlPlaneError


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_etcd_that_exits_reports_its_log(tmp_path: Path) -> None:
    etcd = _script(tmp_path / "etcd", 'echo "etcd: bad flag --frobnicate" >&2; exit 3')
    apiserver = _script(tmp_path / "kube-apiserver", "exit 0")
    cp = ControlPlane(tmp_path / "cp", binaries=ControlPlaneBinaries(apiserver, etcd))
    with pytest.raises(ControlPlaneError) as err:
        cp.start()
    cp.stop()
    message = str(err.value)
    assert "etcd exited with code 3" in message
    assert "bad flag --frobnicate" in message
