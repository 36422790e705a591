"""The device plugin around an apply (blockDevicePluginUntilConfigured), against the real API server.

No kubelet or DaemonSet controller runs: `FakeDevicePluginSet` recreates the node's device-plugin pod
with a new UID when it is deleted and runs `sriovop wait-for-config` as each pod's init container.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sriovop.api.v1 import consts
from sriovop.devcluster import ControlPlane
from sriovop.runtime.client import Client
from sriovop.runtime.kinds import POD, ROLE, ROLE_BINDING
from sriovop.sim.host import SimHost
from test.support.daemon_deviceplugin import FakeDevicePluginSet, device_plugin_pod, wait_for_config_process
from test.support.daemon_harness import annotation, client_for, pf_spec, prepare_cluster, running_daemon, wait_sync
from test.support.poll import wait_for

MARK = consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION
GATE_OFF = {"featureGates": {consts.FG_BLOCK_DEVICE_PLUGIN_UNTIL_CONFIGURED: False}}
#: Device-plugin waits short enough for a test, long enough for a subprocess to start.
DP_WAITS = {"device_plugin_wait_timeout": 60.0, "device_plugin_poll_interval": 0.2}


def _marked(client: Client, namespace: str, uid_name: str) -> bool:
    return annotation(client.get(POD, uid_name, namespace), MARK) is not None


def _num_vfs(sim: SimHost, pci: str) -> int:
    return int(sim.kernel.pfs[pci].numvfs)


def test_init_container_blocks_until_the_daemon_applied(kubeconfig: Path, namespace: str, node_name: str,
                                                        sim: SimHost, tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    pci = xxv["pciAddress"]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 4)]})
    # A marked device-plugin pod on another node: not this daemon's to touch.
    other = client.create(POD, device_plugin_pod(namespace, "some-other-node", annotations={MARK: "true"}), namespace)
    with FakeDevicePluginSet(client, namespace, node_name, kubeconfig, tmp_path / "dp", init=True,
                             on_delete=lambda: _num_vfs(sim, pci),
                             on_init_exit=lambda: _num_vfs(sim, pci)) as dps:
        first = wait_for(dps.current, 30, "the first device-plugin pod")
        wait_for(lambda: _marked(client, namespace, first.pod), 60, "the init container to mark its pod")
        time.sleep(1.5)  # nobody configures the node yet: the init container keeps waiting
        assert first.proc.poll() is None, first.log_text()
        assert _marked(client, namespace, first.pod)
        assert _num_vfs(sim, pci) == 0

        with running_daemon(kubeconfig, namespace, node_name, sim.root, **DP_WAITS) as daemon:
            wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            # Step 11.1: the pod seen before the apply was deleted while the host was unconfigured...
            assert dps.deleted[0] == (first.uid, 0)
            # ...and its init container never succeeded: killed with its pod, or (on a busy machine, before
            # the fake kubelet's next look) exited on its own with an error once its pod was gone.
            wait_for(lambda: first.proc.poll() is not None, 30, "the first init container to stop")
            assert first.killed or first.proc.returncode != 0, first.log_text()
            # ...and its replacement's init container exited 0 only once the VFs existed (11.5).
            last = wait_for(lambda: (r := dps.current()) and r.proc.poll() is not None and r, 60,
                            "the replacement's init container to exit")
            assert last.uid != first.uid
            assert last.proc.returncode == 0, last.log_text()
            assert wait_for(lambda: last.seen_at_exit, 10, "the exit to be seen") == 4
            assert "mark removed" in last.log_text()
            assert annotation(client.get(POD, last.pod, namespace), MARK) is None
            assert [p["metadata"]["uid"] for p in dps.live_pods()] == [last.uid]
            assert daemon.reconciler is not None and daemon.reconciler.applies == 1
    untouched = client.get(POD, other["metadata"]["name"], namespace)
    assert untouched["metadata"]["uid"] == other["metadata"]["uid"]
    assert annotation(untouched, MARK) == "true"


def test_a_device_plugin_restarted_on_its_own_is_unblocked(kubeconfig: Path, namespace: str, node_name: str,
                                                           sim: SimHost, tmp_path: Path) -> None:
    """Steady state: the node is configured, the device plugin restarts (e.g. OOM, node reboot); its
    init container marks the new pod and the next drift check removes the mark, without re-applying."""
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root, **DP_WAITS) as daemon:
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
        with FakeDevicePluginSet(client, namespace, node_name, kubeconfig, tmp_path / "dp", init=True) as dps:
            run = wait_for(lambda: (r := dps.current()) and r.proc.poll() is not None and r, 60,
                           "the init container of a pod started after the apply to exit")
            assert run.proc.returncode == 0, run.log_text()
            assert "pod marked" in run.log_text()
            assert dps.deleted == []
        assert daemon.reconciler is not None and daemon.reconciler.applies == 1


def test_gate_off_restarts_the_device_plugin_after_the_apply(kubeconfig: Path, namespace: str, node_name: str,
                                                             sim: SimHost, tmp_path: Path) -> None:
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    pci = xxv["pciAddress"]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 3)]}, opconfig=GATE_OFF)
    with FakeDevicePluginSet(client, namespace, node_name, kubeconfig, tmp_path / "dp",
                             on_delete=lambda: _num_vfs(sim, pci)) as dps:
        first = wait_for(lambda: dps.created and dps.created[0], 30, "the first device-plugin pod")
        with running_daemon(kubeconfig, namespace, node_name, sim.root, **DP_WAITS):
            wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED)
            # Deleted once, after the VFs were created (the plugin restarts and lists them).
            wait_for(lambda: dps.deleted, 30, "the device-plugin pod to be restarted")
            assert dps.deleted == [(first, 3)]
            live = wait_for(dps.live_pods, 30, "the replacement pod")
            assert [p["metadata"]["uid"] for p in live] != [first]
            assert all(annotation(p, MARK) is None for p in live)
            time.sleep(2.5)  # several drift checks (1 s): no further restart in the steady state
            assert len(dps.deleted) == 1


def test_no_device_plugin_pod_does_not_block_the_daemon(kubeconfig: Path, namespace: str, node_name: str,
                                                        sim: SimHost) -> None:
    """The gate is on (the default) and the waits have upstream's 2 minutes, but with no device-plugin
    pod on the node there is nothing to wait for."""
    client = client_for(kubeconfig)
    xxv = sim.describe()["pfs"][0]
    prepare_cluster(client, namespace, node_name, spec={"interfaces": [pf_spec(xxv, 2)]})
    with running_daemon(kubeconfig, namespace, node_name, sim.root) as daemon:
        assert daemon.settings.device_plugin_wait_timeout == 120.0
        wait_sync(client, namespace, node_name, consts.SYNC_STATUS_SUCCEEDED, timeout=60)
        assert _num_vfs(sim, xxv["pciAddress"]) == 2
        assert daemon.reconciler is not None and daemon.reconciler.applies == 1
    assert client.list(POD, namespace) == []


def _role(client: Client, namespace: str, name: str, verbs: list[str]) -> None:
    client.create(ROLE, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                         "metadata": {"name": name, "namespace": namespace},
                         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]}, namespace)
    client.create(ROLE_BINDING, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                 "metadata": {"name": name, "namespace": namespace},
                                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                               "name": name}]}, namespace)


def test_wait_for_config_polls_when_it_may_not_watch(control_plane: ControlPlane, kubeconfig: Path, namespace: str,
                                                     tmp_path: Path) -> None:
    """An identity with get/patch on pods but no watch: the command falls back to polling and still
    exits 0 once the mark is removed."""
    client = client_for(kubeconfig)
    user = f"dp-nowatch-{namespace}"
    _role(client, namespace, user, ["get", "patch"])
    restricted = control_plane.mint_user(user, [])
    pod = client.create(POD, device_plugin_pod(namespace, "n1"), namespace)
    name = pod["metadata"]["name"]
    proc = wait_for_config_process(restricted, namespace, name, "n1", tmp_path / "init.log")
    try:
        wait_for(lambda: _marked(client, namespace, name), 60, "the mark (RBAC may take a moment)")
        time.sleep(1.0)
        assert proc.poll() is None
        client.patch(POD, name, {"metadata": {"annotations": {MARK: None}}}, namespace)
        assert proc.wait(60) == 0, (tmp_path / "init.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (tmp_path / "init.log").read_text()
    assert "polling instead" in text and "mark removed" in text


@pytest.mark.parametrize("missing", ["pod", "permission"])
def test_wait_for_config_fails_clearly(control_plane: ControlPlane, kubeconfig: Path, namespace: str, tmp_path: Path,
                                       missing: str) -> None:
    client = client_for(kubeconfig)
    if missing == "pod":
        config, name = kubeconfig, "no-such-pod"
    else:
        config = control_plane.mint_user(f"dp-nothing-{namespace}", [])
        name = client.create(POD, device_plugin_pod(namespace, "n1"), namespace)["metadata"]["name"]
    log_path = tmp_path / "init.log"
    proc = wait_for_config_process(config, namespace, name, "n1", log_path, "--retry-max-delay", "0.5")
    assert proc.wait(60) == 1
    text = log_path.read_text()
    assert f"cannot annotate pod {namespace}/{name}" in text
    assert ("POD_NAME and NAMESPACE must name this pod" if missing == "pod" else "needs get/patch/watch") in text
