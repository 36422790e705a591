"""Which pool updates the pool-config controller acts on: not the status writes that the policy-status
controller makes up to once a second during a rollout (each pass re-checks every node's pool)."""

from __future__ import annotations

import copy
from typing import Any

from sriovop.controllers.pool_config import _not_status_only


def pool() -> dict[str, Any]:
    return {"metadata": {"name": "bulk", "resourceVersion": "1", "finalizers": []},
            "spec": {"maxUnavailable": "10%", "nodeSelector": {"matchLabels": {"pool": "bulk"}}},
            "status": {"nodeCount": 3}}


def changed(edit: Any) -> bool:
    old = pool()
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "2"
    edit(new)
    return _not_status_only(old, new)


def test_a_status_write_is_not_acted_on() -> None:
    assert not changed(lambda p: p["status"].update(nodeCount=4, drainingNodes=["n1"]))


def test_spec_finalizers_and_deletion_are() -> None:
    assert changed(lambda p: p["spec"].update(maxUnavailable=2))
    assert changed(lambda p: p["metadata"].update(finalizers=["sriovnetwork.openshift.io/finalizer"]))
    assert changed(lambda p: p["metadata"].update(deletionTimestamp="2026-12-05T00:00:00Z"))
