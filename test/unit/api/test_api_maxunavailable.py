from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sriovop.api.v1.maxunavailable import MaxUnavailableError, max_unavailable, validate_max_unavailable


@pytest.mark.parametrize(("value", "nodes", "expected"), [
    (None, 10, -1),  # absent: unlimited
    (0, 10, 0),  # 0 blocks every drain
    (2, 10, 2),
    (50, 3, 50),  # an int is not capped by the node count
    ("50%", 5, 2),  # rounds down
    ("10%", 5, 0),  # rounds down to 0: blocks (upstream behaviour)
    ("100%", 7, 7),
    ("1%", 100, 1),
    ("+20%", 10, 2),
    ("33%", 0, 0),
])
def test_max_unavailable(value: int | str | None, nodes: int, expected: int) -> None:
    assert max_unavailable(value, nodes) == expected


@pytest.mark.parametrize(("value", "fragment"), [
    (-1, "negative"),
    ("0%", "between 1% and 100%"),
    ("101%", "between 1% and 100%"),
    ("-5%", "between 1% and 100%"),
    ("5", "must be a percentage"),
    ("abc%", "not an integer percentage"),
    ("--5%", "not an integer percentage"),
    ("5.5%", "not an integer percentage"),
    ("%", "not an integer percentage"),
    (True, "integer or a percentage"),
    (1.5, "integer or a percentage"),
])
def test_invalid_values_name_the_value(value: object, fragment: str) -> None:
    with pytest.raises(MaxUnavailableError) as exc:
        validate_max_unavailable(value)  # type: ignore[arg-type]
    assert fragment in str(exc.value) and repr(value).strip("'") in str(exc.value)
    with pytest.raises(MaxUnavailableError):
        max_unavailable(value, 10)  # type: ignore[arg-type]


@given(st.integers(1, 100), st.integers(0, 5000))
def test_percent_is_floor_of_the_share(pct: int, nodes: int) -> None:
    got = max_unavailable(f"{pct}%", nodes)
    assert got * 100 <= pct * nodes < (got + 1) * 100
