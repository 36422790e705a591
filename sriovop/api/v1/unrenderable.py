"""Network spec values that cannot be rendered into a correct NetworkAttachmentDefinition.

Upstream builds the CNI config by pasting spec values into a JSON text template: `capabilities`, `ipam`
(with all whitespace removed) and `metaPlugins` verbatim, `logFile`, `bridge` and `interfaceType`
between quotes without escaping. Upstream's webhook and CRD schemas admit any string there, so a value
can make the rendered config invalid JSON (upstream's reconcile then fails on every retry and no NAD
appears) or, worse, valid JSON with keys the user never wrote as such (`logFile: 'x","type":"macvlan'`).

Each value is therefore checked on its own: a raw-JSON field must parse as one JSON value (a comma-separated
run of values for `metaPlugins`, which is spliced into a list), and a quoted field must stay one JSON
string. The same list serves three readers so they never disagree: the webhook admits the object with
these as admission warnings (upstream admits it), the renderer refuses to render it, and the controller
reports them on Ready=False and on the SpecWarning condition.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

#: String fields pasted between quotes, unescaped, into the CNI config, per kind.
QUOTED_FIELDS: Final = {
    "SriovNetwork": ("logFile",),
    "SriovIBNetwork": (),
    "OVSNetwork": ("bridge", "interfaceType"),
}
#: Raw-JSON fields, with how upstream's template pastes them: (field, as a list, whitespace removed).
_RAW_JSON_FIELDS: Final = (
    ("capabilities", False, False),
    ("ipam", False, True),
    ("metaPlugins", True, False),
)
NOT_RENDERED: Final = "the NetworkAttachmentDefinition is not rendered"


def _no_constants(name: str) -> Any:
    """Python's json accepts NaN and Infinity; Go's JSON scanner (which upstream re-indents with) does not."""
    raise ValueError(f"{name} is not JSON")


def _json_error(text: str) -> str | None:
    try:
        json.loads(text, parse_constant=_no_constants)
    except ValueError as exc:
        return str(exc)
    return None


def _raw_json(spec: Mapping[str, Any]) -> list[str]:
    problems = []
    for field, as_list, squeeze in _RAW_JSON_FIELDS:
        text = spec.get(field)
        if not isinstance(text, str) or not text:
            continue  # unset or empty: the template leaves the key out (ipam becomes {})
        pasted = "".join(text.split()) if squeeze else text
        error = _json_error(f"[{pasted}]" if as_list else pasted)
        if error is not None:
            what = "one or more comma-separated JSON objects" if as_list else "valid JSON"
            problems.append(f"spec.{field}: is not {what} ({error}); it is pasted into the CNI config as "
                            f"written, so {NOT_RENDERED}")
    return problems


def _quoted(kind: str, spec: Mapping[str, Any]) -> list[str]:
    problems = []
    for field in QUOTED_FIELDS.get(kind, ()):
        value = spec.get(field)
        if not isinstance(value, str) or not value:
            continue
        if _json_error(f'"{value}"') is not None:
            problems.append(f"spec.{field}: contains a double quote, a control character or a backslash that "
                            "is not a JSON escape; it is pasted into a JSON string of the CNI config unescaped, "
                            f"so {NOT_RENDERED}")
    return problems


def unrenderable_fields(spec: Mapping[str, Any], kind: str) -> list[str]:
    """`spec.field: why` for each value that would break the rendered CNI config; empty when none does.

    `kind` is the network's kind name (SriovNetwork, SriovIBNetwork or OVSNetwork)."""
    return _raw_json(spec) + _quoted(kind, spec)
