"""The drain handshake as a pure decision table, so every transition is pinned by a unit test.

The config daemon writes what it needs (node `state`, NodeState `desired-state`); the drain
controller answers in the NodeState `current-state`. Given the three annotation values, `decide`
says what the controller does next; the controller module performs it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import GROUP

#: NodeState annotation (ours, not upstream's) naming the pod that keeps a drain from finishing,
#: "<namespace>/<pod>: <reason>". Removed when the drain completes or the node returns to Idle.
DRAIN_BLOCKED_BY_ANNOTATION = f"{GROUP}/drain-blocked-by"

REASON_DRAIN_NODE = "DrainNode"
REASON_COMPLETE_DRAIN = "CompleteDrain"
REASON_DRAIN_BLOCKED = "DrainBlocked"


class Action(enum.Enum):
    NOTHING = "nothing"
    #: The node is back to Idle after a drain: uncordon, then current-state=Idle.
    COMPLETE = "complete"
    #: A drain was requested and none is running: check the pool's capacity, then start.
    START = "start"
    #: current-state is Draining (a drain started earlier, maybe by a previous process): drain.
    CONTINUE = "continue"
    #: An annotation value this controller does not know.
    INVALID = "invalid"


def annotation(obj: Mapping[str, Any], key: str) -> str | None:
    return (obj.get("metadata", {}).get("annotations") or {}).get(key)


def uses_external_drainer(node_state: Mapping[str, Any]) -> bool:
    return annotation(node_state, consts.NODE_STATE_EXTERNAL_DRAINER_ANNOTATION) == "true"


def missing_annotations(node: Mapping[str, Any], node_state: Mapping[str, Any]) -> tuple[bool, bool]:
    """(node lacks `state`, NodeState lacks `current-state` or `desired-state`)."""
    node_missing = annotation(node, consts.NODE_DRAIN_ANNOTATION) is None
    state_missing = (annotation(node_state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT) is None
                     or annotation(node_state, consts.NODE_STATE_DRAIN_ANNOTATION) is None)
    return node_missing, state_missing


def decide(node_request: str, current: str) -> Action:
    """What to do for node annotation `node_request` and NodeState current-state `current`."""
    if current not in consts.CURRENT_DRAIN_STATES:
        return Action.INVALID
    if node_request == consts.DRAIN_IDLE:
        return Action.NOTHING if current == consts.DRAIN_IDLE else Action.COMPLETE
    if node_request in (consts.DRAIN_REQUIRED, consts.REBOOT_REQUIRED):
        if current == consts.DRAIN_COMPLETE:
            return Action.NOTHING
        if current == consts.DRAIN_IDLE:
            return Action.START
        return Action.CONTINUE
    return Action.INVALID


def is_full_drain(node_request: str) -> bool:
    """A reboot evicts everything; a plain reconfiguration only the pods using SR-IOV resources."""
    return node_request == consts.REBOOT_REQUIRED


def occupies_slot(current: str | None) -> bool:
    """Whether a NodeState counts against its pool's maxUnavailable."""
    return current in (consts.DRAINING, consts.DRAIN_COMPLETE)


def stale_blocked_by(node_request: str, node_state: Mapping[str, Any]) -> bool:
    """Whether the NodeState still names a pod blocking a drain that is no longer asked for."""
    return node_request == consts.DRAIN_IDLE and annotation(node_state, DRAIN_BLOCKED_BY_ANNOTATION) is not None


def settled(node: Mapping[str, Any], node_state: Mapping[str, Any]) -> bool:
    """Whether a reconcile given this Node and NodeState would read nothing more and write nothing:
    the NodeState is left to an external drainer, or both carry their annotations, no drain is asked
    for or under way (`decide` says NOTHING), and no stale drain-blocked-by annotation is left to
    remove. The drain controller asks this of its cache before it reads the pair from the server."""
    if uses_external_drainer(node_state):
        return True
    if any(missing_annotations(node, node_state)):
        return False
    request = str(annotation(node, consts.NODE_DRAIN_ANNOTATION))
    if decide(request, str(annotation(node_state, consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT))) is not Action.NOTHING:
        return False
    return not stale_blocked_by(request, node_state)
