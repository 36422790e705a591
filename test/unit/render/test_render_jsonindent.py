"""go_indent must produce what Go's json.Indent(dst, src, "", "    ") produces, byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sriovop.render.jsonindent import go_indent


def test_nested_objects_and_arrays_are_indented_with_four_spaces() -> None:
    src = '{ "a":1, "b":[1, 2,{"c":"d"}],"e":{} , "f":[ ]}'
    assert go_indent(src) == (
        '{\n    "a": 1,\n    "b": [\n        1,\n        2,\n        {\n            "c": "d"\n'
        '        }\n    ],\n    "e": {},\n    "f": []\n}'
    )


def test_tokens_are_copied_verbatim() -> None:
    # Go keeps number spellings and string escapes exactly as written; json.dumps would not.
    src = '{"n":1.50,"e":1E3,"s":"a\\u00e9 \\"q\\" , : { [","u":"é"}'
    assert go_indent(src) == '{\n    "n": 1.50,\n    "e": 1E3,\n    "s": "a\\u00e9 \\"q\\" , : { [",\n    "u": "é"\n}'


def test_leading_whitespace_is_dropped_and_prefix_applied() -> None:
    assert go_indent('  \n [1]', prefix=">", indent="\t") == "[\n>\t1\n>]"


def test_invalid_json_raises_value_error() -> None:
    with pytest.raises(ValueError, match="invalid JSON"):
        go_indent('{"a":}')


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


@given(_json)
def test_matches_python_indent_for_canonical_input(value: object) -> None:
    # For input already in Python's canonical spelling, Go's Indent and json.dumps(indent=4) agree.
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert go_indent(compact) == json.dumps(value, indent=4, ensure_ascii=False)
