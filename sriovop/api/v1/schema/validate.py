"""Judge a JSON object against a generated OpenAPI schema the way kube-apiserver's CRD validation does.

Why have it when the API server validates anyway: the webhook and the unit tests can tell a user
exactly which field is wrong before a round trip, and a test pins that this validator and the real
server agree on every rule of the CRDs (so our CRDs really carry the rules we think they carry).
Only the keywords our generator emits are implemented; `format` (date-time, int64) is not checked.
Like the server, a `null` object property or map value is treated as absent (it is pruned).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sriovop.runtime.kinds import Kind


@dataclass(frozen=True, slots=True)
class FieldError:
    """One violation; `path` uses the API server's notation (`spec.nicSelector.pfNames[0]`)."""

    path: str
    reason: str  # Required | Invalid | Unsupported | Duplicate | Unknown
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        # The server accepts a JSON number with an integral value (2.0) where an integer is expected.
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def validate_schema(schema: Mapping[str, Any], value: Any, path: str = "",
                    unknown_fields: bool = False) -> list[FieldError]:
    """All violations of `schema` by `value`; `unknown_fields=True` also reports fields the server would prune."""
    errors: list[FieldError] = []
    _check(schema, value, path, errors, unknown_fields)
    return errors


def _check(schema: Mapping[str, Any], value: Any, path: str, errors: list[FieldError], unknown: bool) -> None:
    if schema.get("x-kubernetes-int-or-string"):
        if _type_name(value) not in ("string", "integer"):
            errors.append(FieldError(path, "Invalid", f"must be an integer or a string, got {_type_name(value)}"))
        return
    expected = schema.get("type")
    actual = _type_name(value)
    if expected is not None and actual != expected and not (expected == "number" and actual == "integer"):
        errors.append(FieldError(path, "Invalid", f"must be of type {expected}, got {actual} {value!r}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in schema["enum"])
        errors.append(FieldError(path, "Unsupported", f"Unsupported value: {value!r}: supported values: {allowed}"))
    if actual in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            msg = f"{value} should be greater than or equal to {schema['minimum']}"
            errors.append(FieldError(path, "Invalid", msg))
        if "maximum" in schema and value > schema["maximum"]:
            msg = f"{value} should be less than or equal to {schema['maximum']}"
            errors.append(FieldError(path, "Invalid", msg))
    elif actual == "string":
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(FieldError(path, "Invalid", f"should be at least {schema['minLength']} chars long"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(FieldError(path, "Invalid", f"may not be more than {schema['maxLength']} bytes"))
        if "pattern" in schema:
            rx = _PATTERNS.get(schema["pattern"])
            if rx is None:
                rx = _PATTERNS[schema["pattern"]] = re.compile(schema["pattern"])
            if not rx.search(value):
                errors.append(FieldError(path, "Invalid", f"{value!r} should match '{schema['pattern']}'"))
    elif actual == "object":
        _check_object(schema, value, path, errors, unknown)
    elif actual == "array":
        item_schema = schema.get("items")
        for i, item in enumerate(value):
            if item_schema is not None:
                _check(item_schema, item, f"{path}[{i}]", errors, unknown)
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys and schema.get("x-kubernetes-list-type") == "map":
            seen: set[tuple[Any, ...]] = set()
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    k = tuple(item.get(key) for key in keys)
                    if k in seen:
                        dup = dict(zip(keys, k, strict=True))
                        errors.append(FieldError(f"{path}[{i}]", "Duplicate", f"Duplicate value: {dup}"))
                    seen.add(k)


def _check_object(schema: Mapping[str, Any], value: Mapping[str, Any], path: str,
                  errors: list[FieldError], unknown: bool) -> None:
    props: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        # The server prunes `null` for non-nullable properties before validating: null = absent.
        if value.get(name) is None:
            errors.append(FieldError(_join(path, name), "Required", "Required value"))
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = props.get(key)
        if sub is not None:
            if item is not None:
                _check(sub, item, _join(path, key), errors, unknown)
        elif additional is not None:
            if item is not None:  # null map values are pruned too (array items are not)
                _check(additional, item, _join(path, key), errors, unknown)
        elif unknown and props and not schema.get("x-kubernetes-preserve-unknown-fields"):
            near = nearest_field(str(key), list(props))
            hint = f' (did you mean "{_join(path, near)}"?)' if near else ""
            errors.append(FieldError(_join(path, key), "Unknown", f'unknown field "{_join(path, key)}"{hint}'))


def nearest_field(key: str, known: list[str]) -> str:
    """The known field a typo most likely meant: the same letters in another case first (`numVFs` for
    `numVfs`), then the closest spelling; "" when none is close."""
    folded = [k for k in known if k.lower() == key.lower()]
    if folded:
        return folded[0]
    close = difflib.get_close_matches(key.lower(), [k.lower() for k in known], n=1, cutoff=0.7)
    return next((k for k in known if close and k.lower() == close[0]), "")


def validate_object(kind: Kind | str, obj: Mapping[str, Any], unknown_fields: bool = False) -> list[FieldError]:
    """Violations of the kind's CRD schema by a whole object (metadata is not checked)."""
    from sriovop.api.v1.registry import openapi_schema

    return validate_schema(openapi_schema(kind), obj, "", unknown_fields)
