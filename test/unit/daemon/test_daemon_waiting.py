"""What ends a daemon's wait for its drain slot (sriovop/daemon/waiting.py): anything a waiting pass
decided from, or the periodic refresh."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.daemon.settings import LiveConfig
from sriovop.daemon.waiting import Waiting
from sriovop.runtime.objects import freeze

REFRESH = 300.0


def node_state(uid: str = "u1", generation: int = 3, rv: str = "41") -> Any:
    # The informer's cache holds frozen objects.
    return freeze({"metadata": {"name": "n", "uid": uid, "generation": generation, "resourceVersion": rv},
                   "spec": {"interfaces": []}})


def waiting(live: LiveConfig) -> Waiting:
    return Waiting.after(live, 100.0, {"metadata": {"uid": "u1", "generation": 3, "resourceVersion": "41"}})


def test_nothing_changed_and_no_refresh_due_holds() -> None:
    live = LiveConfig(feature_gates={"parallelNicConfig": True})
    assert waiting(live).holds(node_state(), live, 100.0 + REFRESH - 1, REFRESH)


@pytest.mark.parametrize("cached", [node_state(rv="42"), node_state(generation=4), node_state(uid="u2"), None],
                         ids=["new resourceVersion", "new generation", "recreated", "no cache (watch not open)"])
def test_another_node_state_or_none_ends_the_wait(cached: Any) -> None:
    live = LiveConfig()
    assert not waiting(live).holds(cached, live, 101.0, REFRESH)


def test_disable_drain_or_a_feature_gate_changed_ends_the_wait() -> None:
    live = LiveConfig()
    w = waiting(live)
    live.disable_drain = True
    assert not w.holds(node_state(), live, 101.0, REFRESH)
    live.disable_drain = False
    live.feature_gates = {"parallelNicConfig": True}
    assert not w.holds(node_state(), live, 101.0, REFRESH)
    live.feature_gates = {}
    assert w.holds(node_state(), live, 101.0, REFRESH)


def test_the_refresh_ends_the_wait_when_due() -> None:
    live = LiveConfig()
    assert not waiting(live).holds(node_state(), live, 100.0 + REFRESH, REFRESH)


def test_each_node_state_the_waiting_pass_wrote_holds_and_a_later_one_does_not() -> None:
    """A pass that asks for its drain writes its status (rv 41) and then its annotation (rv 42): the
    cache showing either is that pass's own doing; the drain controller's answer (rv 43) is news."""
    live = LiveConfig()
    w = Waiting.after(live, 100.0, node_state(rv="41"), node_state(rv="42"))
    assert w.holds(node_state(rv="41"), live, 101.0, REFRESH)
    assert w.holds(node_state(rv="42"), live, 101.0, REFRESH)
    assert not w.holds(node_state(rv="43"), live, 101.0, REFRESH)


def test_a_write_that_came_back_with_another_spec_is_not_the_waiting_pass_s_own() -> None:
    """The operator changed the spec between the pass's read and its write: the pass decided from the
    old spec, so the NodeState its write returned must start a full pass."""
    live = LiveConfig()
    w = Waiting.after(live, 100.0, node_state(rv="41"), node_state(generation=4, rv="43"))
    assert not w.holds(node_state(generation=4, rv="43"), live, 101.0, REFRESH)
    assert w.holds(node_state(rv="41"), live, 101.0, REFRESH)
