"""Fake CNI plugin binaries in a temporary CNI_PATH (see fakeplugin.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

FAKE = Path(__file__).with_name("fakeplugin.py")


class PluginDir:
    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "calls.jsonl"

    def install(self, *names: str) -> None:
        for name in names:
            path = self.bin / name
            path.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
            path.chmod(0o755)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def plugins(tmp_path: Path) -> PluginDir:
    return PluginDir(tmp_path)
