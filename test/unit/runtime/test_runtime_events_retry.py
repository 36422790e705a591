"""The Events recorder's writes against a server that fails: transient errors are retried, others are not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sriovop.runtime.errors import ApiError, Invalid, ServerError, TooManyRequests
from sriovop.runtime.events import EVENTS_DROPPED, EventRecorder

SUBJECT = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "subject", "namespace": "ns", "uid": "u1"}}


class _FailingWriter:
    """Raises the given errors for the first creates, then accepts; keeps every body it was sent."""

    def __init__(self, *errors: ApiError) -> None:
        self.errors = list(errors)
        self.calls: list[dict[str, Any]] = []
        self.written: list[dict[str, Any]] = []

    def create(self, kind: Any, obj: Mapping[str, Any], namespace: str | None = None) -> Any:
        self.calls.append(dict(obj))
        if self.errors:
            raise self.errors.pop(0)
        self.written.append(dict(obj))
        return obj

    def patch(self, kind: Any, name: str, patch: Any, namespace: str | None = None) -> Any:
        raise AssertionError("no Event is patched here")


def _record(writer: _FailingWriter) -> float:
    failed_before = EVENTS_DROPPED.labels("write_failed")._value.get()
    recorder = EventRecorder(writer, "sriovop-test", host="h")
    try:
        recorder.event(SUBJECT, "Warning", "SyncFailed", "boom")
        assert recorder.flush(30)
    finally:
        recorder.stop()
    return float(EVENTS_DROPPED.labels("write_failed")._value.get() - failed_before)


def test_a_restarting_or_throttling_server_loses_no_event() -> None:
    writer = _FailingWriter(ServerError(503, "unavailable"), TooManyRequests(429, "slow down"),
                            ApiError(0, "connection refused"))
    assert _record(writer) == 0
    assert len(writer.calls) == 4
    [event] = writer.written
    assert (event["reason"], event["message"], event["involvedObject"]["uid"]) == ("SyncFailed", "boom", "u1")


def test_a_rejected_event_is_dropped_at_once_and_counted() -> None:
    writer = _FailingWriter(Invalid(422, "Event.v1 is invalid"))
    assert _record(writer) == 1
    assert len(writer.calls) == 1 and writer.written == []
