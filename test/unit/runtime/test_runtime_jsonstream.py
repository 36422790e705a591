"""The streaming LIST decoder agrees with json.loads on every shape the API server sends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sriovop.runtime.jsonstream import decode_list

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(items=st.lists(st.dictionaries(st.text(), json_values, max_size=5), max_size=6),
       meta=st.dictionaries(st.text(), json_values, max_size=3), indent=st.sampled_from([None, 0, 2]))
def test_matches_json_loads(items: list[dict[str, Any]], meta: dict[str, Any], indent: int | None) -> None:
    doc = {"kind": "List", "metadata": meta, "items": items, "apiVersion": "v1"}
    text = json.dumps(doc, indent=indent)
    seen: list[Any] = []

    def transform(o: dict[str, Any]) -> tuple[str, Any]:
        seen.append(o)
        return ("T", o)

    top, out = decode_list(text.encode(), transform)
    assert [o for _t, o in out] == items == seen
    assert top == {k: v for k, v in doc.items() if k != "items"}


@pytest.mark.parametrize("text", ['{"items": [1,', '{"items": [] "x": 1}', '[1]', '{"a" 1}', '{"items": [}'])
def test_malformed_input_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match="malformed list response"):
        decode_list(text, lambda o: o)


def test_empty_and_null_items() -> None:
    assert decode_list(b"{}", lambda o: o) == ({}, [])
    assert decode_list(b'{"items": null, "metadata": {"resourceVersion": "5"}}', lambda o: o) == (
        {"items": None, "metadata": {"resourceVersion": "5"}}, [])
