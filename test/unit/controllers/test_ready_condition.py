"""Conditions through server-side apply: what is written, when nothing is, and which Events go out.

Host: none (a recording writer and recorder stand in for the API server; the real server-side apply,
including the removal of a dropped condition, is exercised in test/integration/controllers).
"""

from __future__ import annotations

from typing import Any

from sriovop.api.v1.kinds import SRIOV_NETWORK
from sriovop.controllers.ready_condition import ConditionSpec, set_conditions, set_ready


class Writer:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def patch(self, kind: Any, name: str, patch: Any, namespace: str | None = None, **kw: Any) -> Any:
        assert kw == {"patch_type": "apply", "field_manager": "sriov-network-operator", "subresource": "status",
                      "force": True}
        self.bodies.append(patch)
        return patch


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason))


def network(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "n", "namespace": "ns", "generation": 3},
            "status": {"conditions": list(conditions)}}


def cond(type_: str, status: str, reason: str, message: str, generation: int = 3) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


READY = ConditionSpec("Ready", "True", "NetworkReady", "ok")
WARNING = ConditionSpec("SpecWarning", "True", "NetworkSpecInvalid", "spec.resourceName: is empty")


def test_both_conditions_in_one_apply_with_events_for_ready_and_the_warning() -> None:
    writer, recorder = Writer(), Recorder()
    assert set_conditions(writer, recorder, SRIOV_NETWORK, network(), [READY, WARNING])
    (body,) = writer.bodies
    assert [(c["type"], c["status"], c["reason"], c["observedGeneration"]) for c in body["status"]["conditions"]] == [
        ("Ready", "True", "NetworkReady", 3), ("SpecWarning", "True", "NetworkSpecInvalid", 3)]
    assert recorder.events == [("Normal", "NetworkReady"), ("Warning", "NetworkSpecInvalid")]


def test_unchanged_conditions_are_not_written() -> None:
    writer = Writer()
    obj = network(cond("Ready", "True", "NetworkReady", "ok"), cond("SpecWarning", "True", "NetworkSpecInvalid",
                                                                    "spec.resourceName: is empty"))
    assert not set_conditions(writer, None, SRIOV_NETWORK, obj, [READY, WARNING])
    assert writer.bodies == []


def test_a_condition_that_must_be_absent_forces_the_apply_that_drops_it() -> None:
    writer, recorder = Writer(), Recorder()
    obj = network(cond("Ready", "True", "NetworkReady", "ok"), cond("SpecWarning", "True", "NetworkSpecInvalid", "x"))
    assert set_conditions(writer, recorder, SRIOV_NETWORK, obj, [READY], absent=["SpecWarning"])
    assert [c["type"] for c in writer.bodies[0]["status"]["conditions"]] == ["Ready"]
    # Ready kept its status and reason: no Event, and its transition time stays
    assert recorder.events == []
    assert writer.bodies[0]["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    # with nothing to drop and nothing changed, no write
    assert not set_conditions(writer, recorder, SRIOV_NETWORK, network(cond("Ready", "True", "NetworkReady", "ok")),
                              [READY], absent=["SpecWarning"])


def test_a_new_generation_is_written_and_ready_false_is_a_warning_event() -> None:
    writer, recorder = Writer(), Recorder()
    old = network(cond("Ready", "True", "NetworkReady", "ok", generation=2))
    assert set_conditions(writer, recorder, SRIOV_NETWORK, old, [READY])
    assert recorder.events == []  # same status and reason: no Event
    assert set_ready(writer, recorder, SRIOV_NETWORK, old, False, "NamespaceNotFound", "missing")
    assert recorder.events == [("Warning", "NamespaceNotFound")]
    assert writer.bodies[-1]["status"]["conditions"][0]["lastTransitionTime"] != "2026-01-01T00:00:00Z"
