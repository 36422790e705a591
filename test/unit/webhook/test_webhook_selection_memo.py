"""Node selections remembered per nodeSelector and cache version (no API server: in-memory objects)."""

from __future__ import annotations

from sriovop.policyrules.selection_memo import SelectionMemo


def test_same_selector_at_same_version_is_answered_from_memory() -> None:
    memo, calls = SelectionMemo(), []
    nodes = [{"metadata": {"name": "a"}}]

    def compute() -> list[dict[str, object]]:
        calls.append(1)
        return nodes

    first = memo.select("10", {"pool": "p1", "zone": "z"}, compute)
    again = memo.select("10", {"zone": "z", "pool": "p1"}, compute)  # same selector, other key order
    assert first == again == (nodes[0],) and len(calls) == 1


def test_a_new_cache_version_recomputes() -> None:
    memo = SelectionMemo()
    assert memo.select("10", {"pool": "p1"}, lambda: [{"n": 1}]) == ({"n": 1},)
    assert memo.select("11", {"pool": "p1"}, lambda: [{"n": 2}]) == ({"n": 2},)
    # the old version's answers are gone: a request still holding version 10 recomputes too
    assert memo.select("10", {"pool": "p1"}, lambda: [{"n": 3}]) == ({"n": 3},)


def test_bounded_and_malformed_selectors_are_computed_every_time() -> None:
    memo, calls = SelectionMemo(max_selectors=1), []

    def compute() -> list[dict[str, object]]:
        calls.append(1)
        return []

    memo.select("1", {"a": "1"}, compute)
    memo.select("1", {"b": "1"}, compute)  # over the bound: not kept
    memo.select("1", {"b": "1"}, compute)
    memo.select("1", {"c": ["x"]}, compute)  # type: ignore[dict-item]  # unhashable value
    memo.select("1", {"c": ["x"]}, compute)  # type: ignore[dict-item]
    assert len(calls) == 5
    memo.select("1", {"a": "1"}, compute)
    assert len(calls) == 5
