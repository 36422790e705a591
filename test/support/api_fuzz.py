"""Hypothesis strategies that build objects from a kind's OpenAPI schema, mostly valid, sometimes not.

Used to check that the local validator and kube-apiserver judge the same objects the same way.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from sriovop.api.v1.registry import openapi_schema

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5000), st.sampled_from([1.5, 2.0, -0.5]),
    st.sampled_from(["", "on", "x", "25%", "0000:3b:00.0"]),
)


def _value(schema: dict[str, Any], depth: int, noisy: bool) -> st.SearchStrategy[Any]:
    good = _valid(schema, depth, noisy)
    return st.one_of(good, good, good, _SCALARS) if noisy and depth < 6 else good


def _valid(schema: dict[str, Any], depth: int, noisy: bool = True) -> st.SearchStrategy[Any]:
    if schema.get("x-kubernetes-int-or-string"):
        return st.one_of(st.integers(-2, 200), st.sampled_from(["50%", "1", "abc"]))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    t = schema.get("type")
    if t == "integer":
        lo = schema.get("minimum", -10)
        hi = schema.get("maximum", max(lo, 0) + 9000)
        return st.integers(lo - 2, hi + 2) if noisy else st.integers(lo, hi)
    if t == "boolean":
        return st.booleans()
    if t == "string":
        return st.sampled_from(["", "a", "ens1f0#0-3", "Ready", "2026-01-01T00:00:00Z"])
    if t == "array":
        return st.lists(_value(schema["items"], depth + 1, noisy), max_size=2)
    if t == "object":
        props = schema.get("properties", {})
        if not props:
            extra = schema.get("additionalProperties")
            values = _value(extra, depth + 1, noisy) if isinstance(extra, dict) else _SCALARS
            return st.dictionaries(st.sampled_from(["a", "b/c", "hw-offload"]), values, max_size=2)
        required = schema.get("required", [])
        names = sorted(props)
        return st.fixed_dictionaries(
            {},
            optional={n: _value(props[n], depth + 1, noisy) for n in names},
        ).map(lambda d: d if noisy else {**{r: _placeholder(props[r]) for r in required}, **d})
    return _SCALARS


def _placeholder(schema: dict[str, Any]) -> Any:
    """A valid value for a required field the clean strategy left out."""
    if "enum" in schema:
        return schema["enum"][0]
    return {"string": "x", "integer": max(schema.get("minimum", 0), 0), "boolean": False, "array": [],
            "object": {}}.get(schema.get("type", ""), "x")


def objects(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """Half clean (schema-valid unless a nested required field is missing), half with type/range noise."""
    spec_schema = openapi_schema(kind)["properties"]["spec"]
    return st.one_of(_valid(spec_schema, 0, noisy=False), _valid(spec_schema, 0, noisy=True)).map(lambda spec: {
        "apiVersion": "sriovnetwork.openshift.io/v1", "kind": kind, "metadata": {"name": "fuzz"}, "spec": spec})
