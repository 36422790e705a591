"""Fake CNI plugin binaries in a temporary CNI_PATH (see test/support/cni_fakeplugin.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test.support.cni_fakeplugin import PluginDir


@pytest.fixture
def plugins(tmp_path: Path) -> PluginDir:
    return PluginDir(tmp_path)
