"""TypedDicts describing every kind's spec and status: the one source of the CRDs and of static types.

At runtime objects are plain dicts; `typing.cast(PolicySpec, obj["spec"])` gives mypy the shape
for free. JSON names are upstream's, including the odd ones (`totalvfs`, `Vfs`, `Vlan`).
These modules deliberately do not use `from __future__ import annotations` (see schema.openapi).
"""
