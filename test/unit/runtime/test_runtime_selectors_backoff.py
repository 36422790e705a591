"""Client-side selector evaluation and the reflector's backoff schedule."""

from __future__ import annotations

import pytest

from sriovop.runtime.cache import Backoff
from sriovop.runtime.cache.selectors import field_value, parse_field_selector, parse_label_selector
from sriovop.runtime.client import selector_string


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("a=b", {"a": "b"}, True), ("a=b", {"a": "c"}, False), ("a==b", {"a": "b"}, True),
    ("a!=b", {}, True), ("a!=b", {"a": "b"}, False), ("a", {"a": ""}, True), ("a", {}, False),
    ("!a", {}, True), ("!a", {"a": "x"}, False), ("a in (x, y)", {"a": "y"}, True),
    ("a in (x,y),b", {"a": "x"}, False), ("a notin (x,y)", {"a": "z"}, True), ("a notin (x)", {"a": "x"}, False),
    ({"a": "b", "c": "d"}, {"a": "b", "c": "d", "e": "f"}, True), ({"a": "b"}, {}, False), ("", {}, True),
])
def test_label_selector(selector, labels, expected) -> None:  # type: ignore[no-untyped-def]
    assert parse_label_selector(selector)(labels) is expected


def test_field_selector_parsing_and_values() -> None:
    assert parse_field_selector("spec.x=1,metadata.name!=a") == [("spec.x", "1", True), ("metadata.name", "a", False)]
    assert parse_field_selector({"spec.networkNamespace": "ns"}) == [("spec.networkNamespace", "ns", True)]
    with pytest.raises(ValueError, match="field=value"):
        parse_field_selector("spec.x")
    assert field_value({"spec": {"x": {"y": True}}}, "spec.x.y") == "true"
    assert field_value({"spec": {}}, "spec.x.y") == ""
    assert selector_string({"a": "b", "c": "d"}) == "a=b,c=d"
    assert selector_string(None) is None


def test_backoff_doubles_caps_and_resets_after_calm() -> None:
    now = [0.0]
    b = Backoff(clock=lambda: now[0], rand=lambda: 0.0)
    delays = []
    for _ in range(8):
        delays.append(b.next())
        now[0] += 1
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    now[0] += 100
    assert b.next() == 30.0  # 101 s since the last request: not calm long enough
    now[0] += 120
    assert b.next() == 0.8


def test_backoff_jitter_stays_within_base_and_cap() -> None:
    b = Backoff(rand=lambda: 0.999)
    first = b.next()
    assert 0.8 <= first < 1.6
    for _ in range(10):
        assert b.next() <= 30.0
