"""The freshness barrier's read of one kind (`kind_read`), against a fake client (no API server).

The anchor kind is read consistently; the others at the anchor's resourceVersion, which a lagging
watch cache may refuse with 504 ResourceVersionTooLarge: that read is then made consistently, as
kube-apiserver falls back for its own consistent reads. The real server's answers are covered by
test/integration/webhook/test_webhook_cache_freshness.py."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.runtime import kinds as core_kinds
from sriovop.runtime.client import ListPage
from sriovop.runtime.errors import ServerError
from sriovop.webhook.freshness import ServerState
from sriovop.webhook.informer_view import kind_read

TOO_LARGE = {"kind": "Status", "reason": "Timeout", "code": 504,
             "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}}


class FakeClient:
    def __init__(self, refuse: list[ServerError] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._refuse = list(refuse or [])

    def list_page(self, kind: Any, namespace: str | None = None, **kw: Any) -> ListPage:
        self.calls.append({"kind": kind.kind, "namespace": namespace, **kw})
        if self._refuse:
            raise self._refuse.pop(0)
        return ListPage([{"metadata": {"name": "n0"}}], "42", "c", 4)


def test_the_anchor_read_is_a_consistent_list_of_one_item() -> None:
    client = FakeClient()
    assert kind_read(client, core_kinds.NODE, None)(None) == ServerState("42", 5)  # type: ignore[arg-type]
    assert client.calls == [{"kind": "Node", "namespace": None, "limit": 1, "resource_version": None,
                             "resource_version_match": None}]


def test_a_follower_reads_not_older_than_the_anchors_resource_version() -> None:
    client = FakeClient()
    kind_read(client, core_kinds.NODE, None)("17")  # type: ignore[arg-type]
    assert client.calls[0]["resource_version"] == "17"
    assert client.calls[0]["resource_version_match"] == "NotOlderThan"


def test_a_cache_that_did_not_catch_up_in_time_is_read_consistently_instead() -> None:
    client = FakeClient([ServerError(504, "Timeout: Too large resource version: 17, current: 9", TOO_LARGE)])
    assert kind_read(client, core_kinds.NODE, None)("17") == ServerState("42", 5)  # type: ignore[arg-type]
    assert [(c.get("resource_version"), c.get("resource_version_match")) for c in client.calls] == [
        ("17", "NotOlderThan"), (None, None)]


@pytest.mark.parametrize("at", [None, "17"])
def test_other_server_errors_fail_the_read(at: str | None) -> None:
    timeout = ServerError(504, "Timeout: request did not complete", {"kind": "Status", "reason": "Timeout"})
    client = FakeClient([timeout])
    with pytest.raises(ServerError, match="did not complete"):
        kind_read(client, core_kinds.NODE, None)(at)  # type: ignore[arg-type]
    assert len(client.calls) == 1


def test_a_too_large_answer_to_the_consistent_anchor_read_is_not_retried() -> None:
    client = FakeClient([ServerError(504, "Too large resource version", TOO_LARGE)])
    with pytest.raises(ServerError):
        kind_read(client, core_kinds.NODE, None)(None)  # type: ignore[arg-type]
    assert len(client.calls) == 1
