"""A hollow daemons process's shared NodeState watch against a real kube-apiserver: the watch lines
the server writes are the shape `NameFilter` reads, so another process's events are left undecoded and
the declared names' events reach their daemons.

Host: none (no daemon, no simulated host): the shared control plane and one FanoutClient.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sriovop.api.v1.kinds import SRIOV_NETWORK_NODE_STATE
from sriovop.devcluster import ControlPlane
from sriovop.hollow.fanout import FanoutClient
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config

DEADLINE = 120.0


def node_state(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": {"sriovop.io/host-facts": '{"interfaces": [{"name": "mine"}]}'}},
            "spec": {"interfaces": [{"name": "p0", "numVfs": 1, "pciAddress": "0000:3b:00.0"}]}}


def test_other_processes_events_stay_undecoded_and_ours_arrive(control_plane: ControlPlane, kubeconfig: Path,
                                                               namespace: str) -> None:
    plain = Client(load_config(str(kubeconfig)))
    fanout = FanoutClient(load_config(str(kubeconfig)), names={SRIOV_NETWORK_NODE_STATE.plural: ["mine"]})
    try:
        for name in ("mine", "other"):
            plain.create(SRIOV_NETWORK_NODE_STATE, node_state(name, namespace), namespace)
        selector = {"metadata.name": "mine"}
        # as a daemon's reflector: a cache list, then a watch from its resourceVersion
        page = fanout.list_page(SRIOV_NETWORK_NODE_STATE, namespace, field_selector=selector, resource_version="0")
        assert [o["metadata"]["name"] for o in page.items] == ["mine"]
        (hub,) = fanout._hubs.values()
        assert hub.name_filter is not None
        deadline = time.monotonic() + DEADLINE
        while not hub.reflector.watching:  # the hub's own watch is open before the daemon's is
            assert time.monotonic() < deadline, "the hub's watch did not open"
            time.sleep(0.05)
        stream = fanout.watch(SRIOV_NETWORK_NODE_STATE, namespace, field_selector=selector,
                              resource_version=page.resource_version, timeout_seconds=60)
        for name, vfs in (("other", 2), ("other", 3), ("mine", 4)):
            plain.patch(SRIOV_NETWORK_NODE_STATE, name, {"spec": {"interfaces": [
                {"name": "p0", "numVfs": vfs, "pciAddress": "0000:3b:00.0"}]}}, namespace=namespace)
        events = []
        for etype, obj in stream:
            events.append((etype, obj["metadata"]["name"], obj["spec"]["interfaces"][0]["numVfs"]))
            if obj["spec"]["interfaces"][0]["numVfs"] == 4:
                break
        stream.close()
        assert events == [("MODIFIED", "mine", 4)]
        # the two events of "other" reached the hub before "mine"'s (one watch, in order), as stubs
        assert hub.name_filter.skipped == 2
        assert sorted(hub._objects) == [f"{namespace}/mine"]
    finally:
        fanout.close()
        plain.close()
