"""SharedParts: equal parts of cached objects become one frozen object (pure logic, no host)."""

from __future__ import annotations

import gc
import json

import pytest

from sriovop.runtime.cache import shared_parts
from sriovop.runtime.cache.shared_parts import FIRST_SWEEP, SharedParts
from sriovop.runtime.objects import FrozenDict, FrozenList, thaw


def test_equal_parts_are_one_frozen_object() -> None:
    parts = SharedParts()
    a = parts.share({"pciAddress": "0000:3b:00.0", "altNames": ["enp59s0f0"], "vendor": "8086"})
    b = parts.share({"pciAddress": "0000:3b:00.0", "altNames": ["enp59s0f0"], "vendor": "8086"})
    assert a is b
    # another key order is another text: equal, kept apart (the API server writes one order)
    c = parts.share({"vendor": "8086", "altNames": ["enp59s0f0"], "pciAddress": "0000:3b:00.0"})
    assert c == a and list(c) == ["vendor", "altNames", "pciAddress"]
    assert type(a) is FrozenDict and type(a["altNames"]) is FrozenList
    with pytest.raises(TypeError, match="read-only"):
        a["vendor"] = "15b3"
    assert thaw(a) == {"pciAddress": "0000:3b:00.0", "altNames": ["enp59s0f0"], "vendor": "8086"}
    assert len(parts) == 2


def test_different_parts_stay_apart() -> None:
    parts = SharedParts()
    a = parts.share([{"name": "ens1f0", "numVfs": 8}])
    b = parts.share([{"name": "ens1f0", "numVfs": 16}])
    c = parts.share([{"name": "ens1f0", "numVfs": "8"}])  # JSON types count: "8" is not 8
    assert (a, b, c) == ([{"name": "ens1f0", "numVfs": 8}], [{"name": "ens1f0", "numVfs": 16}],
                         [{"name": "ens1f0", "numVfs": "8"}])
    assert a is not b and a is not c
    assert len(parts) == 3


def test_a_hash_collision_never_returns_a_different_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_parts, "hash", lambda _text: 7, raising=False)
    parts = SharedParts()
    a = parts.share({"x": 1})
    b = parts.share({"x": 2})
    assert (a, b) == ({"x": 1}, {"x": 2})
    assert parts.share({"x": 1}) is a  # the first part keeps the slot
    assert parts.share({"x": 2}) is not b and parts.share({"x": 2}) == b


def test_parts_no_object_holds_are_swept_when_the_table_doubles() -> None:
    parts = SharedParts()
    kept = [parts.share({"i": i}) for i in range(10)]
    for i in range(FIRST_SWEEP - 10):
        parts.share({"dropped": i})  # nobody keeps these
    gc.collect()
    # the share that filled the table to FIRST_SWEEP swept it: the kept parts and the last one are left
    assert len(parts) <= 11
    assert all(parts.share({"i": i}) is kept[i] for i in range(10))
    for i in range(3 * FIRST_SWEEP):  # churn: the table never grows past twice what is alive
        parts.share({"churn": i})
    assert len(parts) < 2 * FIRST_SWEEP


def test_shared_parts_serialise_as_before() -> None:
    part = {"interfaces": [{"name": "ens1f0", "vfGroups": [{"resourceName": "r", "vfRange": "0-3"}]}]}
    text = json.dumps(part)
    assert json.dumps(SharedParts().share(json.loads(text))) == text
