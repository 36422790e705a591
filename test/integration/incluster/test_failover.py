"""Failover as users cause it, on the installed cluster: `kubectl delete pod` of the leader, SIGKILL
of the leader's container (`crictl stop -t 0`) and SIGSTOP of the leader's process until another
replica holds the Lease (then SIGCONT), once each.

Cluster: `sriovop dev cluster up --nodes 2`, operator Deployment (3 replicas) installed by
`kubectl apply -k` (see test/support/incluster.py); no SR-IOV host is involved. For each fault the
test changes a SriovNetwork right after the fault (the change must reach its NetworkAttachmentDefinition:
nothing is lost), records when the Lease changed hands, then changes the network again: the time from
the fault until that change is rendered is the takeover time. It
prints the figures in hack/failover.py's shape (`summary` per fault type, `outcomes`); the
overlapping-writer analysis of hack/failover.py (which needs every replica's write log) is not done here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from functools import partial
from typing import Any

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION, SRIOV_NETWORK
from sriovop.devcluster.binaries import find_node_binaries
from sriovop.runtime.kinds import POD
from test.support.controllers_harness import wait_for
from test.support.failover_analysis import LeaseChange, summarize
from test.support.failover_lease import LeaseRecorder
from test.support.incluster import NAMESPACE, Installed

LEASE = "a56def2a.openshift.io"
TIMEOUT_S = 300.0
FAULTS = ("delete-pod", "sigkill-container", "sigstop-past-lease")


def _holder_pod(holder: str) -> str:
    return holder.split("_", 1)[0]


def _crictl(env: Installed, pod: dict[str, Any], *args: str) -> str:
    sock = env.cluster.containerd_socket(pod["spec"]["nodeName"])
    cmd = [str(find_node_binaries().crictl), "--runtime-endpoint", f"unix://{sock}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout


def _container_id(env: Installed, pod: dict[str, Any]) -> str:
    ids = _crictl(env, pod, "ps", "-q", "--label", f"io.kubernetes.pod.uid={pod['metadata']['uid']}").split()
    assert len(ids) == 1, f"running containers of pod {pod['metadata']['name']}: {ids}"
    return ids[0]


def _container_pid(env: Installed, pod: dict[str, Any]) -> int:
    """The host pid of the container's process (the operator is the container's first process)."""
    return int(json.loads(_crictl(env, pod, "inspect", _container_id(env, pod)))["info"]["pid"])


def _nad_vlan(env: Installed, name: str) -> int | None:
    nad = env.kube.get(NETWORK_ATTACHMENT_DEFINITION, name, "default")
    return json.loads(nad["spec"]["config"]).get("vlan")


def _takeover(recorder: LeaseRecorder, since: float, old: str) -> LeaseChange | None:
    return next((c for c in recorder.snapshot() if c.at >= since and c.holder and c.holder != old), None)


def _nad_has_vlan(env: Installed, name: str, vlan: int) -> bool:
    return _nad_vlan(env, name) == vlan


def _admitted(env: Installed, name: str, vlan: int) -> bool:
    env.kube.patch(SRIOV_NETWORK, name, {"spec": {"vlan": vlan}}, NAMESPACE)
    return True


def test_leader_failover_as_users_cause_it(installed: Installed) -> None:
    network = f"failover-{uuid.uuid4().hex[:6]}"
    wait_for(lambda: installed.kube.create(SRIOV_NETWORK, {
        "metadata": {"name": network, "namespace": NAMESPACE},
        "spec": {"resourceName": "intelnics", "networkNamespace": "default", "vlan": 1}}),
        timeout=TIMEOUT_S, what="the SriovNetwork admitted", interval=1)
    wait_for(lambda: _nad_vlan(installed, network) == 1, timeout=TIMEOUT_S, what="its NAD rendered", interval=0.5)
    recorder = LeaseRecorder(installed.kube, NAMESPACE, LEASE)
    recorder.start()
    outcomes: list[dict[str, Any]] = []
    try:
        for index, fault in enumerate(FAULTS):
            during, after = 2 + 2 * index, 3 + 2 * index  # the vlans written during and after the takeover
            holder = wait_for(recorder.holder, timeout=TIMEOUT_S, what="a leader")
            pod = dict(installed.kube.get(POD, _holder_pod(holder), NAMESPACE))
            at = time.time()
            stopped = 0
            if fault == "delete-pod":
                installed.kube.delete(POD, pod["metadata"]["name"], NAMESPACE)
            elif fault == "sigkill-container":
                _crictl(installed, pod, "stop", "-t", "0", _container_id(installed, pod))
            else:  # SIGSTOP past the lease; SIGCONT once another replica holds it
                stopped = _container_pid(installed, pod)
                os.kill(stopped, signal.SIGSTOP)
            try:
                # A change made while the leader is going away must not be lost.
                wait_for(partial(_admitted, installed, network, during), timeout=TIMEOUT_S,
                         what="the SriovNetwork change admitted", interval=0.5)
                change = wait_for(partial(_takeover, recorder, at, holder), timeout=TIMEOUT_S,
                                  what=f"the Lease taken over after {fault}")
                wait_for(partial(_nad_has_vlan, installed, network, during), timeout=TIMEOUT_S,
                         what=f"vlan {during} rendered into the NAD after {fault}", interval=0.2)
                # Takeover: a change made once the Lease changed hands, rendered by the new leader.
                wait_for(partial(_admitted, installed, network, after), timeout=TIMEOUT_S,
                         what="the SriovNetwork change admitted", interval=0.5)
                wait_for(partial(_nad_has_vlan, installed, network, after), timeout=TIMEOUT_S,
                         what=f"vlan {after} rendered into the NAD after {fault}", interval=0.2)
                rendered = time.time()
            finally:
                if stopped:
                    os.kill(stopped, signal.SIGCONT)
            # takeover_s: fault -> a change made after the handover is in its NAD (the new leader wrote).
            outcomes.append({"fault": fault, "at": round(at, 3), "old_leader": holder, "new_leader": change.holder,
                             "lease_acquired_s": round(change.at - at, 3), "takeover_s": round(rendered - at, 3),
                             "took_over": True})
    finally:
        recorder.stop()
    print(json.dumps({"summary": summarize(outcomes), "lost_network_changes": 0, "outcomes": outcomes}, indent=2))
    assert [o["fault"] for o in outcomes] == list(FAULTS)
