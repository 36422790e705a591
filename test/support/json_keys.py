"""Every key of a JSON document, at any depth: what the camelCase tests of `-o json` look at."""

from __future__ import annotations


def all_keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in all_keys(v)}
    return set()
