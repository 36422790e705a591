"""The applied generation is persisted on the host: a restarted daemon with an unchanged spec neither
re-applies nor asks for a drain (upstream forgets it and redoes the whole pass)."""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.daemon.app import CONTROLLER_NAME, Daemon
from sriovop.daemon.generation import AppliedGeneration
from sriovop.host.paths import HostPaths
from sriovop.runtime.kinds import NODE
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    annotation,
    client_for,
    get_state,
    pf_spec,
    prepare_cluster,
    running_daemon,
    set_current,
    set_spec,
    wait_sync,
)
from test.support.poll import wait_for


def passes(daemon: Daemon) -> float:
    """Completed reconcile passes that ended in the periodic requeue."""
    value = daemon.registry.get_sample_value("controller_runtime_reconcile_total",
                                             {"controller": CONTROLLER_NAME, "result": "requeue_after"})
    return value or 0.0


def test_restart_with_unchanged_spec_does_nothing(kubeconfig: Path, namespace: str, node_name: str,
                                                   sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv, igb = sim.describe()["pfs"]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4, mtu=9000), pf_spec(igb, 2)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root):
        state = wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
    paths = HostPaths.at(sim.root)
    applied = AppliedGeneration(paths.state_dir).load()
    assert applied is not None and applied.generation == state["metadata"]["generation"]
    assert applied.uid == state["metadata"]["uid"]
    record = paths.pci_record(xxv["pciAddress"])
    record_mtime = record.stat().st_mtime_ns
    node_rv = client.get(NODE, node_name)["metadata"]["resourceVersion"]
    state_rv = state["metadata"]["resourceVersion"]

    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        wait_for(lambda: passes(daemon) >= 2, 30, "two reconcile passes after the restart")
        assert daemon.reconciler is not None and daemon.reconciler.applies == 0
        assert daemon.reconciler.status.writes == 0
    # Nothing was written anywhere: no InProgress, no drain request, no record rewritten.
    after = get_state(client, namespace, node_name)
    assert after["metadata"]["resourceVersion"] == state_rv
    assert annotation(after, consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_IDLE
    assert client.get(NODE, node_name)["metadata"]["resourceVersion"] == node_rv
    assert record.stat().st_mtime_ns == record_mtime

    # Control: without the persisted generation the restart runs an apply pass again.
    AppliedGeneration(paths.state_dir).clear()
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        wait_for(lambda: daemon.reconciler is not None and daemon.reconciler.applies == 1, 30, "an apply pass")
    assert record.stat().st_mtime_ns != record_mtime


def test_spec_changed_while_stopped_is_applied_after_restart(kubeconfig: Path, namespace: str, node_name: str,
                                                            sim: SimHost) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root):
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
    set_spec(client, namespace, node_name, [pf_spec(xxv, 6)])
    with running_daemon(kubeconfig, namespace, node_name, sim.root):
        # A configured PF with VFs changes: the drain is requested; with disableDrain off and no
        # controller running, the test answers for it.
        wait_for(lambda: annotation(get_state(client, namespace, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED, 30, "drain request")
        set_current(client, namespace, node_name, consts.DRAIN_COMPLETE)
        wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 6, 30, "6 VFs")
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
