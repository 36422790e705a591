"""Turn annotated TypedDicts into OpenAPI v3 (structural) schemas, the way controller-gen turns Go types.

Rules: properties and `required` are sorted like controller-gen's output; a TypedDict's docstring is
the object's description, a field's `Doc` marker overrides it; `Literal[...]` becomes an enum;
`int | str` becomes `x-kubernetes-int-or-string`; `dict[str, X]` becomes `additionalProperties`.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin, is_typeddict

from sriovop.api.v1.schema.markers import (
    Default,
    Doc,
    Format,
    ListMap,
    ListType,
    MapType,
    Maximum,
    MaxLength,
    Minimum,
    MinLength,
    Pattern,
)

Schema = dict[str, Any]


class SchemaError(TypeError):
    """A type annotation that has no OpenAPI equivalent (a bug in a types module, caught by unit tests)."""


def _unwrap_required(hint: Any) -> tuple[Any, bool]:
    origin = get_origin(hint)
    if origin is Required:
        return get_args(hint)[0], True
    if origin is NotRequired:
        return get_args(hint)[0], False
    return hint, False


def _split_annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    markers: tuple[Any, ...] = ()
    while get_origin(hint) is typing.Annotated:
        markers = tuple(hint.__metadata__) + markers
        hint = hint.__origin__
    return hint, markers


def field_hints(td: type) -> dict[str, tuple[Any, bool]]:
    """Field name -> (annotation without Required/NotRequired, required?) for a TypedDict class.

    Requiredness is read from the resolved hints rather than `__required_keys__`, which is unreliable
    for `Required[...]` under postponed annotations on Python 3.11.
    """
    hints = typing.get_type_hints(td, include_extras=True)
    return {name: _unwrap_required(hint) for name, hint in hints.items()}


def _apply_markers(schema: Schema, markers: tuple[Any, ...]) -> Schema:
    for m in markers:
        if isinstance(m, Doc):
            schema["description"] = inspect.cleandoc(m.text)
        elif isinstance(m, Default):
            schema["default"] = m.value
        elif isinstance(m, Minimum):
            schema["minimum"] = m.value
        elif isinstance(m, Maximum):
            schema["maximum"] = m.value
        elif isinstance(m, MinLength):
            schema["minLength"] = m.value
        elif isinstance(m, MaxLength):
            schema["maxLength"] = m.value
        elif isinstance(m, Pattern):
            schema["pattern"] = m.regex
        elif isinstance(m, Format):
            schema["format"] = m.name
        elif isinstance(m, ListMap):
            schema["x-kubernetes-list-map-keys"] = list(m.keys)
            schema["x-kubernetes-list-type"] = "map"
        elif isinstance(m, ListType):
            schema["x-kubernetes-list-type"] = m.name
        elif isinstance(m, MapType):
            schema["x-kubernetes-map-type"] = m.name
        else:
            raise SchemaError(f"unknown schema marker {m!r}")
    return schema


def object_schema(td: type) -> Schema:
    """The OpenAPI schema of a TypedDict class (an `object` with sorted properties)."""
    if not is_typeddict(td):
        raise SchemaError(f"{td!r} is not a TypedDict")
    schema: Schema = {}
    if td.__doc__:
        schema["description"] = inspect.cleandoc(td.__doc__)
    props: Schema = {}
    required: list[str] = []
    for name, (hint, is_required) in sorted(field_hints(td).items()):
        props[name] = type_schema(hint, where=f"{td.__name__}.{name}")
        if is_required:
            required.append(name)
    if props:
        schema["properties"] = props
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return _ordered(schema)


def type_schema(hint: Any, where: str = "") -> Schema:
    """The OpenAPI schema of one annotation (with its markers)."""
    base, markers = _split_annotated(hint)
    schema = _base_schema(base, where)
    _apply_markers(schema, markers)
    return _ordered(schema)


def _base_schema(base: Any, where: str) -> Schema:
    origin = get_origin(base)
    if base is str:
        return {"type": "string"}
    if base is bool:
        return {"type": "boolean"}
    if base is int:
        return {"type": "integer"}
    if base is float:
        return {"type": "number"}
    if origin is Literal:
        values = list(get_args(base))
        if all(isinstance(v, str) for v in values):
            return {"enum": values, "type": "string"}
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return {"enum": values, "type": "integer"}
        raise SchemaError(f"{where}: mixed Literal {values!r}")
    if origin in (Union, types.UnionType):
        args = set(get_args(base))
        if args == {int, str}:
            return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
        raise SchemaError(f"{where}: only `int | str` unions are expressible, got {base!r}")
    if origin is list:
        (item,) = get_args(base)
        return {"items": type_schema(item, where=f"{where}[]"), "type": "array"}
    if origin is dict:
        key, value = get_args(base)
        if key is not str:
            raise SchemaError(f"{where}: map keys must be str")
        if value is Any:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"additionalProperties": type_schema(value, where=f"{where}{{}}"), "type": "object"}
    if is_typeddict(base):
        return object_schema(base)
    raise SchemaError(f"{where}: unsupported annotation {base!r}")


# controller-gen emits keys alphabetically; keep the same order so diffs against upstream stay readable.
def _ordered(schema: Schema) -> Schema:
    return {k: schema[k] for k in sorted(schema)}
