"""What a daemon reads through one drained apply: its NodeState once per pass that decides something
and once before its last status write, and never its Node.

In a rollout every node makes these requests, and their first part within the first minute, all at
once (docs/rollout.md):
- the drain request's own writes (status, then annotation) enqueue a pass that ends at once instead of
  reading the NodeState live and discovering the host only to wait again;
- the Node's drain annotation is merge-patched without reading the Node first;
- the drain is released (Idle) on the NodeState the pass read, and the Idle annotation's patch returns
  the fresh copy the host facts are compared with: no GET before it.

On the simulated host against a real kube-apiserver, with the test as the drain controller. The
daemon's requeue interval is longer than the test, so every pass in it comes from a watch event.
"""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    CountingClient,
    annotation,
    client_for,
    get_state,
    pf_spec,
    prepare_cluster,
    running_daemon,
    set_current,
    set_spec,
    wait_sync,
    waits_skipped,
)
from test.support.poll import wait_for

#: Longer than the test: no pass comes from the requeue timer.
REQUEUE = 600.0


def test_a_drained_apply_reads_the_node_state_only_to_decide(kubeconfig: Path, namespace: str, node_name: str,
                                                             sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    counting = CountingClient(client_for(kubeconfig).config)
    state_path = f"/namespaces/{namespace}/sriovnetworknodestates/{node_name}"
    node_path = f"/api/v1/nodes/{node_name}"

    def requests_since(start: int) -> list[tuple[str, str]]:
        """(method, what) of each request: "state", "status" or "node" for this node's objects."""
        named = {state_path: "state", state_path + "/status": "status", node_path: "node"}
        return [(m, next((w for p, w in named.items() if path.endswith(p)), path))
                for m, path in counting.snapshot()[start:]]

    with running_daemon(kubeconfig, namespace, node_name, sim.root, client=counting,
                        requeue_after=REQUEUE) as daemon:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        start, skips = len(counting.snapshot()), waits_skipped(daemon)
        gen = set_spec(client, namespace, node_name, [pf_spec(xxv, 2)])["metadata"]["generation"]
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED, 60, "Drain_Required")
        wait_for(lambda: waits_skipped(daemon) > skips, 60, "a pass enqueued by the request's writes, ended at once")
        asked = requests_since(start)
        assert [r for r in asked if r == ("GET", "state")] == [("GET", "state")], asked
        assert ("PATCH", "node") in asked and ("PATCH", "state") in asked, asked

        set_current(client, namespace, node_name, consts.DRAINING)
        set_current(client, namespace, node_name, consts.DRAIN_COMPLETE)
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED, generation=gen)
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
        assert sim.kernel.pfs[xxv["pciAddress"]].numvfs == 2

        rollout = requests_since(start)
        assert ("GET", "node") not in rollout, rollout
        # The request's pass, the passes on Draining and on DrainComplete (one when the first already
        # sees DrainComplete), and the read before the Succeeded status: 6 before these changes.
        assert len([r for r in rollout if r == ("GET", "state")]) <= 4, rollout
        idle = max(i for i, r in enumerate(rollout) if r == ("PATCH", "node"))
        assert rollout[idle - 1] != ("GET", "state"), rollout  # released on the copy the pass read
        assert ("PATCH", "status") in rollout[idle:], rollout
