"""The one JSON style of every `-o json`: the Kubernetes API's camelCase keys, two-space indent.

Python dataclasses have snake_case fields; `camel_keys` turns them into the API's spelling so that
`status`, `explain` and `plan` read alike (`pciAddress`, `syncStatus`, `lastSyncError`, ...).
"""

from __future__ import annotations

import json
from typing import Any


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_keys(value: Any) -> Any:
    """`value` with every dict key in camelCase (keys that already are stay as they are)."""
    if isinstance(value, dict):
        return {camel(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [camel_keys(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(camel_keys(value), indent=2)
