"""A daemon waiting for its drain slot sends nothing while nothing it waits on changes (waiting.py).

On the simulated host against a real kube-apiserver, with no drain controller: the test answers as one
would. The daemon's own client counts every request it sends. The window is a number of passes the
daemon ended at once, not a time; the bound on full passes in it comes from the time it took, so a
busy machine (fewer, later passes) only loosens it.
"""

from __future__ import annotations

import time
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.daemon.waiting import REFRESH_REQUEUES
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

REQUEUE = 0.3
WINDOW_SKIPS = 12


def test_a_waiting_daemon_sends_nothing_until_answered(kubeconfig: Path, namespace: str, node_name: str,
                                                        sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    counting = CountingClient(client_for(kubeconfig).config)
    state_path = f"/namespaces/{namespace}/sriovnetworknodestates/{node_name}"

    def read_state(requests: list[tuple[str, str]]) -> bool:
        return any(m == "GET" and p.endswith(state_path) for m, p in requests)
    with running_daemon(kubeconfig, namespace, node_name, sim.root, client=counting,
                        requeue_after=REQUEUE) as daemon:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        pf = sim.kernel.pfs[xxv["pciAddress"]]
        gen = set_spec(client, namespace, node_name, [pf_spec(xxv, 2)])["metadata"]["generation"]
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED, 60, "Drain_Required")
        wait_for(lambda: waits_skipped(daemon) >= 1, 60, "a requeued pass of the waiting daemon ended at once")

        t0, s0, sent0 = time.monotonic(), waits_skipped(daemon), counting.snapshot()
        wait_for(lambda: waits_skipped(daemon) >= s0 + WINDOW_SKIPS, 120, f"{WINDOW_SKIPS} passes ended at once")
        elapsed, window = time.monotonic() - t0, counting.snapshot()[len(sent0):]
        # Only the full pass due every REFRESH_REQUEUES intervals may read: one GET of the NodeState each.
        full_passes = elapsed / (REFRESH_REQUEUES * REQUEUE) + 1
        assert [r for r in window if r[0] != "GET"] == [], window
        assert len(window) <= full_passes, (elapsed, window)
        assert pf.numvfs == 4

        # The full pass still comes: the status keeps showing the host while the node waits.
        sent1 = len(counting.snapshot())
        wait_for(lambda: read_state(counting.snapshot()[sent1:]), 120, "the waiting daemon's periodic full pass")
        assert pf.numvfs == 4

        # The drain controller's answers are new resourceVersions: the waiting ends with them.
        set_current(client, namespace, node_name, consts.DRAINING)
        set_current(client, namespace, node_name, consts.DRAIN_COMPLETE)
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED, generation=gen)
        assert pf.numvfs == 2
        assert annotation(state, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
