from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sriovop.api.v1.pfnames import (
    PfNameError,
    find_pf_entry,
    index_in_range,
    parse_pf_name,
    parse_vf_range,
    validate_pf_name,
    vf_ranges_overlap,
)


@pytest.mark.parametrize(("entry", "expected"), [
    ("ens1#0-3", ("ens1", 0, 3)),
    ("ens1f0", ("ens1f0", None, None)),
    ("enp216s0f0np0#8-15", ("enp216s0f0np0", 8, 15)),
    ("ens1#5-5", ("ens1", 5, 5)),
    ("ens1#+1-2", ("ens1", 1, 2)),  # Go's Atoi accepts a leading '+', and so does upstream's webhook
])
def test_parse_pf_name(entry: str, expected: tuple[str, int | None, int | None]) -> None:
    assert parse_pf_name(entry) == expected


@pytest.mark.parametrize(("entry", "fragment"), [
    ("ens1#0-3#4", "at most one '#'"),
    ("ens1#0", "exactly one '-'"),
    ("ens1#0-1-2", "exactly one '-'"),
    ("ens1#-1-3", "exactly one '-'"),
    ("ens1#a-3", "the first index of the VF range 'a'"),
    ("ens1#0-b", "the last index of the VF range 'b'"),
    ("ens1#0-", "the last index of the VF range ''"),
    ("ens1# 1-2", "the first index"),
    ("ens1#4-2", "the last VF index 2 is smaller than the first 4"),
])
def test_parse_pf_name_errors_name_the_entry_and_rule(entry: str, fragment: str) -> None:
    with pytest.raises(PfNameError) as exc:
        parse_pf_name(entry)
    assert repr(entry) in str(exc.value) and fragment in str(exc.value)


def test_validate_pf_name_requires_the_range_below_num_vfs() -> None:
    validate_pf_name("ens1#0-7", 8)
    validate_pf_name("ens1", 0)
    with pytest.raises(PfNameError, match=r"last VF index 8 must be lower than numVfs 8"):
        validate_pf_name("ens1#0-8", 8)


@pytest.mark.parametrize(("a", "b", "overlap"), [
    ("0-3", "4-7", False),
    ("0-3", "3-7", True),
    ("2-5", "0-9", True),
    ((0, 0), (0, 0), True),
    ((5, 6), (1, 4), False),
])
def test_vf_ranges_overlap(a: str | tuple[int, int], b: str | tuple[int, int], overlap: bool) -> None:
    assert vf_ranges_overlap(a, b) is overlap
    assert vf_ranges_overlap(b, a) is overlap


ranges = st.tuples(st.integers(0, 70), st.integers(0, 70)).map(lambda t: (min(t), max(t)))


@given(ranges, ranges)
def test_overlap_agrees_with_set_intersection(a: tuple[int, int], b: tuple[int, int]) -> None:
    brute = bool(set(range(a[0], a[1] + 1)) & set(range(b[0], b[1] + 1)))
    assert vf_ranges_overlap(a, b) is brute
    assert vf_ranges_overlap(f"{a[0]}-{a[1]}", f"{b[0]}-{b[1]}") is brute


@given(st.text(alphabet="ab#-0123456789", max_size=12))
def test_parse_pf_name_never_fails_with_anything_but_pf_name_error(entry: str) -> None:
    try:
        name, first, last = parse_pf_name(entry)
    except PfNameError:
        return
    assert (first is None) == (last is None) == ("#" not in entry)
    if first is not None and last is not None:
        assert 0 <= first <= last and f"{name}#" in entry


def test_index_in_range_and_find_entry() -> None:
    assert index_in_range(3, "0-3") and not index_in_range(4, "0-3") and not index_in_range(0, "bad")
    assert find_pf_entry(["ens2#0-1", "ens1#2-3"], ["ens1", "enp59s0f0"]) == "ens1#2-3"
    assert find_pf_entry(["ens2"], ["ens1"]) is None
    with pytest.raises(PfNameError):
        parse_vf_range("3")
