"""The daemon's half of the drain handshake, as a pure function (upstream's `handleDrain`).

The daemon writes `Drain_Required`/`Reboot_Required` (node annotation `sriovnetwork.openshift.io/state`
and NodeState `desired-state`); the drain controller answers on the NodeState's `current-state` with
`Draining`, then `DrainComplete`; the daemon applies and writes `Idle`.

One rule beyond the simple exchange: if a full drain (reboot) becomes necessary while only a partial
drain was granted, the daemon withdraws its request (`Idle`) so the controller uncordons and a
`Reboot_Required` can be asked for next; a partial drain does not make a reboot safe.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sriovop.api.v1 import consts


class DrainStep(enum.Enum):
    #: Go on and apply (drain complete, not needed, or disabled).
    PROCEED = "proceed"
    #: The controller is working on it: do nothing, look again later.
    WAIT = "wait"
    #: Write `annotation` on the node and the NodeState, then wait.
    REQUEST = "request"


@dataclass(frozen=True)
class DrainAction:
    step: DrainStep
    annotation: str | None = None
    reason: str = ""


def decide_drain(desired: str, current: str, *, need_drain: bool, need_reboot: bool,
                 disable_drain: bool) -> DrainAction:
    """What to do given the annotations and the plugins' answers (reboot implies drain)."""
    need_drain = need_drain or need_reboot
    wanted = consts.REBOOT_REQUIRED if need_reboot else consts.DRAIN_REQUIRED
    escalate = need_reboot and desired == consts.DRAIN_REQUIRED
    if current == consts.DRAIN_COMPLETE:
        if escalate:
            return DrainAction(DrainStep.REQUEST, consts.DRAIN_IDLE,
                               "a reboot is needed but only a partial drain was granted: withdrawing it")
        return DrainAction(DrainStep.PROCEED, reason="drain complete")
    if current == consts.DRAINING:
        if escalate:
            return DrainAction(DrainStep.REQUEST, consts.DRAIN_IDLE,
                               "a reboot is needed but only a partial drain is in progress: withdrawing it")
        return DrainAction(DrainStep.WAIT, reason="the node is draining")
    # current is Idle (or something unknown, treated as Idle).
    if not need_drain:
        # An earlier request the controller has not taken up yet is withdrawn by the Idle written
        # after this apply.
        return DrainAction(DrainStep.PROCEED, reason="no drain needed")
    if disable_drain:
        return DrainAction(DrainStep.PROCEED, reason="drain disabled in SriovOperatorConfig")
    if desired == wanted:
        return DrainAction(DrainStep.WAIT, reason=f"{wanted} requested; waiting for the drain controller")
    return DrainAction(DrainStep.REQUEST, wanted, f"requesting {wanted}")
