"""The suite's poll loop (test/support/poll.py): what it returns, what counts as "not yet", how it fails.
No host, no server: predicates over local state."""

from __future__ import annotations

import itertools

import pytest

from test.support.poll import TimedOut, wait_for


def test_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, [], {"ready": True}])
    assert wait_for(lambda: next(values), 5, "a value") == {"ready": True}


def test_a_tolerated_exception_is_not_yet() -> None:
    calls = itertools.count(1)

    def check() -> str:
        if next(calls) < 3:
            raise KeyError("status")
        return "ok"

    assert wait_for(check, 5, "status") == "ok"


def test_timeout_names_what_and_the_last_exception() -> None:
    def check() -> bool:
        raise KeyError("syncStatus")

    with pytest.raises(TimedOut, match=r"waiting for the NodeState's status; last value: KeyError\('syncStatus'\)"):
        wait_for(check, 0.05, "the NodeState's status")


def test_timeout_names_the_last_falsy_value() -> None:
    with pytest.raises(TimedOut, match=r"waiting for nodes; last value: \[\]"):
        wait_for(list, 0.05, "nodes")


def test_an_exception_outside_tolerate_fails_at_once() -> None:
    calls = itertools.count(1)

    def check() -> bool:
        next(calls)
        raise ValueError("the CNI left net1 down")

    with pytest.raises(ValueError, match="net1 down"):
        wait_for(check, 30, "a carrier", tolerate=(KeyError,))
    assert next(calls) == 2  # one check, no retry


def test_checked_once_more_after_the_deadline() -> None:
    # A predicate slower than the whole deadline still gets the look after it: the second call holds.
    calls = itertools.count(1)

    def slow() -> bool:
        import time

        time.sleep(0.05)
        return next(calls) >= 2

    assert wait_for(slow, 0.01, "the second look") is True
