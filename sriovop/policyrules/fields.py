"""Typed reads from an admitted object's JSON, each failing as a denial that names the field.

The API server's schema normally guarantees these types, but the webhook is also called with objects
the schema never saw (dry-run tools, fuzzers, a CRD out of date), and a wrong type must become a clear
denial rather than an exception.
"""

from __future__ import annotations

from typing import Any

from sriovop.policyrules.denied import Denied


def get_map(parent: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Denied(path, f"must be an object, got {type(value).__name__}")
    return value


def get_str(parent: dict[str, Any], key: str, path: str, default: str = "") -> str:
    value = parent.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise Denied(path, f"must be a string, got {type(value).__name__}")
    return value


def get_int(parent: dict[str, Any], key: str, path: str, default: int = 0) -> int:
    value = parent.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise Denied(path, f"must be an integer, got {type(value).__name__}")
    return value


def get_bool(parent: dict[str, Any], key: str, path: str, default: bool = False) -> bool:
    value = parent.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Denied(path, f"must be a boolean, got {type(value).__name__}")
    return value


def get_str_list(parent: dict[str, Any], key: str, path: str) -> list[str]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Denied(path, f"must be a list of strings, got {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise Denied(f"{path}[{i}]", f"must be a string, got {type(item).__name__}")
    return value


def get_str_map(parent: dict[str, Any], key: str, path: str) -> dict[str, str]:
    value = get_map(parent, key, path)
    for k, v in value.items():
        if not isinstance(v, str):
            raise Denied(f"{path}.{k}", f"must be a string, got {type(v).__name__}")
    return value


def loose_str(value: Any) -> str:
    """For data written by our own components (NodeState status): a wrong type reads as empty."""
    return value if isinstance(value, str) else ""


def loose_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_map(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (for reading optional nested objects)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
