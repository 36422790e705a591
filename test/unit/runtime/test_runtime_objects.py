"""Cached objects are read-only; copies are mutable and serialise like the original."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from sriovop.runtime.objects import FrozenDict, FrozenList, freeze, loads_frozen, loads_frozen_stripped, thaw

DOC = {"metadata": {"name": "a", "resourceVersion": "1", "managedFields": [{"manager": "m"}],
                    "labels": {"x": "y"}},
       "spec": {"list": [1, [2, 3], {"k": [4]}]}}


@pytest.mark.parametrize("build", [lambda: loads_frozen(json.dumps(DOC)), lambda: freeze(DOC)])
def test_every_level_is_read_only(build) -> None:  # type: ignore[no-untyped-def]
    o = build()
    assert o == DOC
    for attempt in (
        lambda: o.__setitem__("x", 1), lambda: o["metadata"].update(a=1), lambda: o.pop("spec"),
        lambda: o["metadata"]["labels"].setdefault("q", "r"), lambda: o["spec"]["list"].append(1),
        lambda: o["spec"]["list"][1].__setitem__(0, 9), lambda: o["spec"]["list"][2]["k"].extend([1]),
        lambda: o["metadata"].__delitem__("name"), lambda: o["spec"]["list"].sort(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            attempt()
    assert o == DOC


def test_copies_are_mutable_plain_and_equal() -> None:
    o = loads_frozen(json.dumps(DOC))
    for c in (thaw(o), copy.deepcopy(o)):
        assert type(c) is dict and type(c["spec"]["list"]) is list and type(c["spec"]["list"][2]) is dict
        c["spec"]["list"].append(5)
        c["metadata"]["labels"]["new"] = "1"
    assert o == DOC
    assert json.loads(json.dumps(o)) == DOC
    assert isinstance(o, dict) and isinstance(o["spec"]["list"], list)
    assert pickle.loads(pickle.dumps(o)) == DOC
    assert isinstance(pickle.loads(pickle.dumps(o)), FrozenDict)
    assert isinstance(freeze(DOC)["spec"]["list"], FrozenList)


def test_stripped_decoder_drops_only_metadata_managed_fields() -> None:
    doc = dict(DOC, spec={"managedFields": [1]})
    o = loads_frozen_stripped(json.dumps(doc))
    assert "managedFields" not in o["metadata"]
    assert o["spec"]["managedFields"] == [1]


def test_short_values_of_separately_decoded_objects_are_shared_long_ones_are_not() -> None:
    """Cache memory: repeated short values (vendor IDs, drivers, label values) are one str object."""
    import json as _json

    from sriovop.runtime.objects import SHARED_VALUE_MAX_LEN, freeze_decoded

    long_value = "x" * (SHARED_VALUE_MAX_LEN + 1)
    text = _json.dumps({"metadata": {"name": "n"}, "status": {"interfaces": [
        {"vendor": "8086", "linkSpeed": "25000 Mb/s", "note": long_value}], "drivers": ["ice", long_value]}})
    a, b = freeze_decoded(_json.loads(text)), freeze_decoded(_json.loads(text))
    ia, ib = a["status"]["interfaces"][0], b["status"]["interfaces"][0]
    assert ia["vendor"] is ib["vendor"] and ia["linkSpeed"] is ib["linkSpeed"]
    assert a["status"]["drivers"][0] is b["status"]["drivers"][0]
    assert ia["note"] == ib["note"] and ia["note"] is not ib["note"]
    assert a == b and _json.loads(text) == a
