"""When is the demo done: every node's NodeState asks for VFs and the daemon reports them applied.

`Succeeded` alone is not enough: a NodeState with an empty spec is Succeeded before any policy exists,
so each requested PF must also report the requested number of VFs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.runtime.client import Reader


@dataclass(frozen=True)
class NodeProgress:
    sync_status: str
    drain: str
    vfs_ready: int
    vfs_wanted: int
    error: str

    @property
    def done(self) -> bool:
        return (self.sync_status == consts.SYNC_STATUS_SUCCEEDED and self.vfs_wanted > 0
                and self.vfs_ready == self.vfs_wanted)

    def describe(self) -> str:
        text = f"{self.sync_status or 'no status yet'}, VFs {self.vfs_ready}/{self.vfs_wanted}, drain {self.drain}"
        return f"{text}, last error: {self.error}" if self.error else text


@dataclass(frozen=True)
class Convergence:
    nodes: dict[str, NodeProgress]

    @property
    def done(self) -> bool:
        return bool(self.nodes) and all(p.done for p in self.nodes.values())


def node_progress(state: Mapping[str, Any] | None) -> NodeProgress:
    if state is None:
        return NodeProgress("", "-", 0, 0, "")
    spec, status = state.get("spec") or {}, state.get("status") or {}
    annotations = state["metadata"].get("annotations") or {}
    reported = {i.get("pciAddress"): int(i.get("numVfs") or 0) for i in status.get("interfaces") or []}
    wanted = ready = 0
    for iface in spec.get("interfaces") or []:
        n = int(iface.get("numVfs") or 0)
        wanted += n
        ready += min(n, reported.get(iface.get("pciAddress"), 0))
    desired = annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION, "-")
    current = annotations.get(consts.NODE_STATE_DRAIN_ANNOTATION_CURRENT, "-")
    return NodeProgress(str(status.get("syncStatus") or ""), f"{desired}/{current}", ready, wanted,
                        str(status.get("lastSyncError") or ""))


def observe(reader: Reader, namespace: str, nodes: list[str]) -> Convergence:
    states = {s["metadata"]["name"]: s for s in reader.list(SRIOV_NETWORK_NODE_STATE, namespace)}
    return Convergence({name: node_progress(states.get(name)) for name in nodes})
