"""SRIOVOP_DEV_TIMEOUT_SCALE stretches the dev cluster's start-up deadlines, and only stretches them."""

from __future__ import annotations

import pytest

from sriovop.devcluster import deadlines


def test_no_scale_keeps_the_deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(deadlines.ENV_SCALE, raising=False)
    assert deadlines.scaled(60) == 60


def test_a_scale_multiplies_every_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(deadlines.ENV_SCALE, "4")
    assert deadlines.scaled(60) == 240
    assert deadlines.scaled(300) == 1200


@pytest.mark.parametrize("raw", ["fast", "0.5", "0", "-2", "inf", "nan"])
def test_a_scale_that_is_no_number_or_shortens_is_refused_naming_the_variable(
        monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(deadlines.ENV_SCALE, raw)
    with pytest.raises(deadlines.DeadlineScaleError, match=f"{deadlines.ENV_SCALE}={raw!r}"):
        deadlines.scaled(60)
