"""The daemon's side of the drain handshake (upstream's handleDrain plus the escalation rule)."""

from __future__ import annotations

import pytest

from sriovop.api.v1.consts import DRAIN_COMPLETE, DRAIN_IDLE, DRAIN_REQUIRED, DRAINING, REBOOT_REQUIRED
from sriovop.daemon.handshake import DrainStep, decide_drain

P, W, R = DrainStep.PROCEED, DrainStep.WAIT, DrainStep.REQUEST


@pytest.mark.parametrize(("desired", "current", "drain", "reboot", "disabled", "step", "annotation"), [
    # nothing needed
    (DRAIN_IDLE, DRAIN_IDLE, False, False, False, P, None),
    # a drain is needed: ask, then wait for the controller, then go once it is complete
    (DRAIN_IDLE, DRAIN_IDLE, True, False, False, R, DRAIN_REQUIRED),
    (DRAIN_REQUIRED, DRAIN_IDLE, True, False, False, W, None),
    (DRAIN_REQUIRED, DRAINING, True, False, False, W, None),
    (DRAIN_REQUIRED, DRAIN_COMPLETE, True, False, False, P, None),
    # a reboot implies a (full) drain
    (DRAIN_IDLE, DRAIN_IDLE, False, True, False, R, REBOOT_REQUIRED),
    (REBOOT_REQUIRED, DRAIN_IDLE, True, True, False, W, None),
    (REBOOT_REQUIRED, DRAIN_COMPLETE, True, True, False, P, None),
    # a partial drain granted but a reboot needed now: withdraw, so a full drain can be asked for
    (DRAIN_REQUIRED, DRAIN_COMPLETE, True, True, False, R, DRAIN_IDLE),
    (DRAIN_REQUIRED, DRAINING, True, True, False, R, DRAIN_IDLE),
    # a drain the controller already completed is used even if no longer needed (the Idle comes after)
    (DRAIN_REQUIRED, DRAIN_COMPLETE, False, False, False, P, None),
    # still draining for an earlier request: wait for it to finish
    (DRAIN_REQUIRED, DRAINING, False, False, False, W, None),
    # disableDrain skips asking, but never interrupts a drain that is under way
    (DRAIN_IDLE, DRAIN_IDLE, True, False, True, P, None),
    (DRAIN_IDLE, DRAIN_IDLE, True, True, True, P, None),
    (DRAIN_REQUIRED, DRAINING, True, False, True, W, None),
    # an earlier request not taken up yet and no longer needed: go on (Idle is written afterwards)
    (DRAIN_REQUIRED, DRAIN_IDLE, False, False, False, P, None),
])
def test_decide_drain(desired: str, current: str, drain: bool, reboot: bool, disabled: bool, step: DrainStep,
                      annotation: str | None) -> None:
    action = decide_drain(desired, current, need_drain=drain, need_reboot=reboot, disable_drain=disabled)
    assert (action.step, action.annotation) == (step, annotation)
    assert action.reason
