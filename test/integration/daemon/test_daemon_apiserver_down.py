"""The API server going away never ends the daemon: it waits at start-up, rides out a restart while
running, and converges once the server is back (a private control plane: this one gets restarted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.api.v1 import consts
from sriovop.devcluster import ControlPlane, process
from sriovop.sim.host import SimHost
from test.support.daemon_harness import (
    DaemonProcess,
    annotation,
    client_for,
    get_state,
    pf_spec,
    prepare_cluster,
    set_current,
    set_spec,
    wait_sync,
)
from test.support.kube import apply_crds, create_namespace
from test.support.poll import wait_for

REPO = Path(__file__).resolve().parents[3]
NAMESPACE = "sriov-network-operator"


@pytest.fixture
def private_cp() -> Iterator[ControlPlane]:
    cp = ControlPlane().start()
    try:
        apply_crds(cp.kubeconfig, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
        create_namespace(cp.kubeconfig, NAMESPACE)
        yield cp
    finally:
        cp.stop()


def test_daemon_survives_apiserver_outages(private_cp: ControlPlane, node_name: str, sim: SimHost,
                                           tmp_path: Path) -> None:
    client = client_for(private_cp.kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, NAMESPACE, node_name, spec={"interfaces": [pf_spec(xxv, 2)]})

    # 1. Start while the API server is down: the daemon waits (logging why) instead of exiting. The
    #    server comes back only once the daemon has said it is waiting, so the order is certain.
    #    (restart runs on this thread: the control plane's children die with the thread that spawned them.)
    process.terminate(private_cp.apiserver)
    daemon = DaemonProcess(private_cp.kubeconfig, NAMESPACE, node_name, sim.root, tmp_path / "daemon.log")
    try:
        wait_for(lambda: daemon.log_text().count("waiting at start-up") >= 2, 60, "the daemon to report its wait")
        assert "Connection refused" in daemon.log_text()
        assert daemon.alive()
        private_cp.restart_apiserver()
        wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 2, 60, "2 VFs once the server is back")
        wait_sync(client, NAMESPACE, node_name, consts.SYNC_STATUS_SUCCEEDED)

        # 2. Restart the API server under the running daemon; a change made afterwards still arrives
        #    (the NodeState watch is re-established) and is applied.
        private_cp.restart_apiserver(downtime=2.0)
        client = client_for(private_cp.kubeconfig)
        set_spec(client, NAMESPACE, node_name, [pf_spec(xxv, 5)])
        wait_for(lambda: annotation(get_state(client, NAMESPACE, node_name),
                                    consts.NODE_STATE_DRAIN_ANNOTATION) == consts.DRAIN_REQUIRED, 60,
                 "the drain request for the change")
        set_current(client, NAMESPACE, node_name, consts.DRAIN_COMPLETE)
        wait_for(lambda: sim.kernel.pfs[xxv["pciAddress"]].numvfs == 5, 60, "5 VFs after the restart")
        wait_sync(client, NAMESPACE, node_name, consts.SYNC_STATUS_SUCCEEDED)
        assert daemon.alive(), daemon.log_text()[-3000:]
    finally:
        assert daemon.stop() == 0, daemon.log_text()[-3000:]
