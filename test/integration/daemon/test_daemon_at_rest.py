"""The config daemon at rest makes no API request besides its watches, against a real kube-apiserver.

On the simulated host (an XXV710 and an 82576 port): a configured node, this node's device-plugin pod
(blockDevicePluginUntilConfigured on, upstream's default), nothing changing. The daemon's own client
counts every request it sends; the periodic passes are counted by the controller's
controller_runtime_reconcile_total. The window is a number of passes, not a time: a short requeue
makes it short, and the budget is upstream's default pace (one pass per 30 s) turned per pass.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sriovop.api.v1 import consts
from sriovop.daemon.app import CONTROLLER_NAME, Daemon
from sriovop.daemon.settings import DEFAULT_REQUEUE_AFTER
from sriovop.runtime.kinds import POD
from sriovop.sim.host import SimHost
from test.support.daemon_deviceplugin import device_plugin_pod
from test.support.daemon_harness import (
    CountingClient,
    annotation,
    client_for,
    pf_spec,
    prepare_cluster,
    running_daemon,
    wait_sync,
)
from test.support.poll import wait_for

MARK = consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
#: Periodic passes counted at rest.
WINDOW_PASSES = 12
#: The target: at most one request per minute at the default requeue (30 s), i.e. per two passes.
BUDGET_PER_PASS = DEFAULT_REQUEUE_AFTER / 60.0


def passes(daemon: Daemon) -> float:
    total = 0.0
    for result in ("success", "error", "requeue", "requeue_after"):
        total += daemon.registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": CONTROLLER_NAME, "result": result}) or 0.0
    return total


def test_daemon_at_rest_sends_no_request_but_still_unblocks_a_marked_device_plugin(
        kubeconfig: Path, namespace: str, node_name: str, sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    client.create(POD, device_plugin_pod(namespace, node_name), namespace)
    counting = CountingClient(client_for(kubeconfig).config)
    with running_daemon(kubeconfig, namespace, node_name, sim.root, client=counting, requeue_after=0.3,
                        device_plugin_wait_timeout=5.0, device_plugin_poll_interval=0.2) as daemon:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED, timeout=120)
        # Let the passes after the apply (host facts, the status it just wrote) reach the caches.
        settled = passes(daemon) + 4
        wait_for(lambda: passes(daemon) >= settled, 60, "a few periodic passes after the apply")
        p0, sent0 = passes(daemon), counting.snapshot()
        wait_for(lambda: passes(daemon) >= p0 + WINDOW_PASSES, 120, f"{WINDOW_PASSES} periodic passes at rest")
        p1, sent1 = passes(daemon), counting.snapshot()
        window = sent1[len(sent0):]
        assert [r for r in window if r[0] in WRITES] == [], window
        assert len(window) <= (p1 - p0) * BUDGET_PER_PASS, (p1 - p0, window)

        # The cache-fed steady state still unblocks a device-plugin pod that restarted on its own.
        marked = client.create(POD, device_plugin_pod(namespace, node_name, annotations={MARK: "true"}), namespace)
        name = marked["metadata"]["name"]
        wait_for(lambda: annotation(client.get(POD, name, namespace), MARK) is None, 60,
                 "the daemon to remove the wait mark of a pod that appeared at rest")


def test_a_pass_at_rest_reads_the_host_facts_and_the_rdma_mode_once(
        kubeconfig: Path, namespace: str, node_name: str, sim: SimHost) -> None:
    """On the simulated host: the facts published for `sriovop plan` also serve the drift check and
    `status.system`, so a pass at rest reads them (and the kernel's RDMA mode, a round trip to the
    host) once, not three times."""
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root, requeue_after=0.3) as daemon:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED, timeout=120)
        settled = passes(daemon) + 4
        wait_for(lambda: passes(daemon) >= settled, 60, "a few periodic passes after the apply")
        assert daemon.reconciler is not None
        host = daemon.reconciler.hosts.get()
        calls = {"facts": 0, "rdma": 0}

        def counted(name: str, read: Callable[[], Any]) -> Callable[[], Any]:
            def call() -> Any:
                calls[name] += 1
                return read()
            return call

        host.facts = counted("facts", host.facts)  # type: ignore[method-assign]
        host.io.rdma_netns_mode = counted("rdma", host.io.rdma_netns_mode)  # type: ignore[method-assign]
        p0 = passes(daemon)
        wait_for(lambda: passes(daemon) >= p0 + WINDOW_PASSES, 120, f"{WINDOW_PASSES} periodic passes at rest")
    # Stopped: every pass begun since the wrappers went in has ended (one may have begun before them).
    window = passes(daemon) - p0
    for name, n in calls.items():
        assert window - 1 <= n <= window + 1, (name, n, window)
