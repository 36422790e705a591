"""SriovNetworkPoolConfig `maxUnavailable`: how many nodes of a pool may drain at once.

Upstream semantics, which users rely on: absent = unlimited (-1); an int is used as is (negative is an
error); a string must be `N%` with 1 <= N <= 100 and is scaled down (`10%` of 5 nodes is 0); and 0
means no node may ever start draining.
"""

from __future__ import annotations

import re

from sriovop.api.v1.consts import UNLIMITED

_SIGNED_INT = re.compile(r"[+-]?[0-9]+")


class MaxUnavailableError(ValueError):
    """maxUnavailable cannot be interpreted; the message quotes the value and says what is accepted."""


def _percent(value: str) -> int:
    if not value.endswith("%"):
        raise MaxUnavailableError(
            f"maxUnavailable {value!r}: a string must be a percentage like '25%' (or use an integer)"
        )
    digits = value[:-1]
    if not _SIGNED_INT.fullmatch(digits):
        raise MaxUnavailableError(f"maxUnavailable {value!r}: {digits!r} is not an integer percentage")
    pct = int(digits)
    if not 1 <= pct <= 100:
        raise MaxUnavailableError(f"maxUnavailable {value!r}: a percentage must be between 1% and 100%")
    return pct


def validate_max_unavailable(value: int | str | None) -> None:
    """Raise MaxUnavailableError unless `value` is absent, a non-negative int, or a 1-100 percentage."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MaxUnavailableError(f"maxUnavailable {value!r}: must be an integer or a percentage string")
    if isinstance(value, str):
        _percent(value)
    elif value < 0:
        raise MaxUnavailableError(f"maxUnavailable {value}: negative numbers are not allowed")


def max_unavailable(value: int | str | None, node_count: int) -> int:
    """How many of `node_count` nodes may be draining at once; -1 (consts.UNLIMITED) means no limit."""
    validate_max_unavailable(value)
    if value is None:
        return UNLIMITED
    if isinstance(value, str):
        return node_count * _percent(value) // 100
    return value
