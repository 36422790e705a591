"""Apply the CRD `default`s to a dict exactly where the API server would (structural defaulting).

The server defaults on every read from etcd and every write, so objects from the API already carry
them; this is for objects built in memory (the webhook's view of a dry run, tests, renderers that take
a spec before it was stored). Only the branches of the schema that hold a default are walked.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from sriovop.runtime.kinds import Kind

# A pruned plan: {"defaults": {field: value}, "props": {field: plan}, "items": plan, "values": plan}
Plan = dict[str, Any]


def _plan(schema: Mapping[str, Any]) -> Plan | None:
    plan: Plan = {}
    defaults = {k: s["default"] for k, s in schema.get("properties", {}).items() if "default" in s}
    if defaults:
        plan["defaults"] = defaults
    props = {k: p for k, s in schema.get("properties", {}).items() if (p := _plan(s)) is not None}
    if props:
        plan["props"] = props
    if "items" in schema and (items := _plan(schema["items"])) is not None:
        plan["items"] = items
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping) and (values := _plan(additional)) is not None:
        plan["values"] = values
    return plan or None


@functools.cache
def _kind_plan(kind_name: str) -> Plan | None:
    from sriovop.api.v1.registry import openapi_schema

    return _plan(openapi_schema(kind_name))


def _apply(plan: Plan, value: Any) -> None:
    if isinstance(value, dict):
        for key, default in plan.get("defaults", {}).items():
            if key not in value:
                value[key] = copy.deepcopy(default)
        for key, sub in plan.get("props", {}).items():
            if key in value:
                _apply(sub, value[key])
        if "values" in plan:
            for item in value.values():
                _apply(plan["values"], item)
    elif isinstance(value, list) and "items" in plan:
        for item in value:
            _apply(plan["items"], item)


def apply_defaults(kind: Kind | str, obj: dict[str, Any]) -> dict[str, Any]:
    """Fill the CRD defaults into `obj` in place (and return it). Absent parents are not created."""
    plan = _kind_plan(kind if isinstance(kind, str) else kind.kind)
    if plan is not None:
        _apply(plan, obj)
    return obj
