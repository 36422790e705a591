"""Webhook availability on the installed cluster: how long SR-IOV writes are refused when the
operator-webhook pod is deleted (its DaemonSet recreates it).

Cluster: `sriovop dev cluster up --nodes 2`, operator installed by `kubectl apply -k` (see
test/support/incluster.py); no SR-IOV host is involved (admission only).
"""

from __future__ import annotations

import time
from typing import Any

from sriovop.runtime.kinds import POD
from test.support.controllers_harness import wait_for
from test.support.incluster import NAMESPACE, Installed
from test.support.webhook_availability import WriteProbe, longest_refusal

WEBHOOK_LABELS = {"app": "operator-webhook"}
TIMEOUT_S = 420.0


def _ready_webhook_pod(env: Installed, not_uid: str = "") -> dict[str, Any] | None:
    for pod in env.pods(NAMESPACE, WEBHOOK_LABELS):
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        if ready and pod["metadata"]["uid"] != not_uid and not pod["metadata"].get("deletionTimestamp"):
            return pod
    return None


def _admitting(probe: WriteProbe, since: float, count: int = 3) -> bool:
    return probe.admitted_since(since) >= count


def test_deleting_the_webhook_pod_refuses_writes_only_until_the_new_pod_serves(installed: Installed) -> None:
    old = wait_for(lambda: _ready_webhook_pod(installed), timeout=TIMEOUT_S, what="a Ready operator-webhook pod")
    with WriteProbe(installed.kube, NAMESPACE) as probe:
        wait_for(lambda: _admitting(probe, 0.0), timeout=TIMEOUT_S, what="writes admitted before the deletion")
        deleted_at = time.monotonic()
        installed.kube.delete(POD, old["metadata"]["name"], NAMESPACE)
        wait_for(lambda: _ready_webhook_pod(installed, not_uid=old["metadata"]["uid"]), timeout=TIMEOUT_S,
                 what="the recreated operator-webhook pod Ready", interval=0.5)
        ready_at = time.monotonic()
        wait_for(lambda: _admitting(probe, ready_at), timeout=TIMEOUT_S, what="writes admitted by the new pod")
    window = longest_refusal([a for a in probe.attempts if a.start >= deleted_at])
    print(f"webhook pod deleted: longest refused window {window:.2f}s "
          f"({len(probe.refusals())} refused of {len(probe.attempts)} writes)")
    # Refusals can only happen between the deletion and the new pod serving.
    assert all(deleted_at <= a.start <= ready_at for a in probe.refusals()), probe.refusals()[-1:]
    assert window <= ready_at - deleted_at
