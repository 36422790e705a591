"""StatusWriter: patches carry the resourceVersion of a fresh read, conflicts are retried from a new
read, unchanged status is not written, and syncStatus changes become Events."""

from __future__ import annotations

import copy
from typing import Any

from sriovop.daemon.status import StatusWriter
from sriovop.runtime.errors import Conflict


class FakeApi:
    """A NodeState whose resourceVersion moves under the writer (someone else writes in between)."""

    def __init__(self, conflicts: int) -> None:
        self.obj: dict[str, Any] = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
                                    "metadata": {"name": "n1", "namespace": "ns", "resourceVersion": "1"},
                                    "status": {"syncStatus": "InProgress", "lastSyncError": "old"}}
        self.conflicts = conflicts
        self.gets = 0
        self.patches: list[dict[str, Any]] = []

    def get(self, kind: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.gets += 1
        return copy.deepcopy(self.obj)

    def patch(self, kind: Any, name: str, body: dict[str, Any], namespace: str | None = None,
              subresource: str | None = None) -> dict[str, Any]:
        assert subresource == "status"
        self.patches.append(body)
        if self.conflicts:
            self.conflicts -= 1
            self.obj["metadata"]["resourceVersion"] = str(int(self.obj["metadata"]["resourceVersion"]) + 1)
            raise Conflict(409, "the object has been modified", None)
        if body["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
            raise Conflict(409, "the object has been modified", None)  # as the server guards it
        for k, v in body["status"].items():
            if v is None:
                self.obj["status"].pop(k, None)
            else:
                self.obj["status"][k] = v
        self.obj["metadata"]["resourceVersion"] = str(int(self.obj["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(self.obj)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.seen.append((type, reason, message))


def test_conflicts_are_retried_from_a_fresh_read() -> None:
    api, events = FakeApi(conflicts=2), Events()
    writer = StatusWriter(api, "ns", "n1", events)  # type: ignore[arg-type]
    written = writer.write(interfaces=[{"pciAddress": "0000:18:00.0"}], sync_status="Succeeded", last_sync_error="")
    assert api.gets == 3 and len(api.patches) == 3
    assert [p["metadata"]["resourceVersion"] for p in api.patches] == ["1", "2", "3"]
    assert written["status"] == {"syncStatus": "Succeeded", "interfaces": [{"pciAddress": "0000:18:00.0"}]}
    assert events.seen == [("Normal", "SyncStatusChanged", "Status changed from: InProgress to: Succeeded")]


def test_nothing_to_change_writes_nothing() -> None:
    api, events = FakeApi(conflicts=0), Events()
    writer = StatusWriter(api, "ns", "n1", events)  # type: ignore[arg-type]
    writer.write(sync_status="InProgress")
    assert not api.patches and writer.writes == 0 and not events.seen


def test_failed_event_carries_the_error() -> None:
    api, events = FakeApi(conflicts=0), Events()
    StatusWriter(api, "ns", "n1", events).write(  # type: ignore[arg-type]
        sync_status="Failed", last_sync_error="pf 0000:18:00.0: step write-numvfs: out of memory")
    assert api.patches[0]["status"] == {"syncStatus": "Failed",
                                        "lastSyncError": "pf 0000:18:00.0: step write-numvfs: out of memory"}
    assert events.seen[0][2].endswith("to: Failed. Last Error: pf 0000:18:00.0: step write-numvfs: out of memory")


def test_a_live_base_saves_the_first_get() -> None:
    api = FakeApi(conflicts=0)
    base = api.get(None, "n1")
    api.gets = 0
    writer = StatusWriter(api, "ns", "n1")  # type: ignore[arg-type]
    writer.write(sync_status="InProgress", base=base)  # already so: neither a read nor a write
    assert api.gets == 0 and not api.patches
    writer.write(sync_status="Succeeded", base=base)
    assert api.gets == 0 and [p["metadata"]["resourceVersion"] for p in api.patches] == ["1"]
    assert api.obj["status"]["syncStatus"] == "Succeeded"


def test_a_stale_base_is_retried_from_a_get() -> None:
    api = FakeApi(conflicts=0)
    base = api.get(None, "n1")
    api.obj["metadata"]["resourceVersion"] = "7"  # someone wrote after our read
    api.gets = 0
    StatusWriter(api, "ns", "n1").write(sync_status="Succeeded", base=base)  # type: ignore[arg-type]
    assert api.gets == 1 and api.obj["status"]["syncStatus"] == "Succeeded"
