"""Small, forgiving sysfs readers.

sysfs attributes end with a newline and may vanish between listdir and open (hot-unplug, VFs being
removed); readers return None instead of raising so discovery can skip what disappeared.
"""

from __future__ import annotations

import os
from pathlib import Path


def read_str(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def read_int(path: Path, base: int = 10) -> int | None:
    value = read_str(path)
    if value is None:
        return None
    try:
        return int(value, base)
    except ValueError:
        return None


def link_basename(path: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def hex_id(path: Path) -> str:
    """`0x8086\n` → `8086` (the NodeState spells ids without the prefix)."""
    value = read_str(path) or ""
    return value[2:] if value.startswith("0x") else value
