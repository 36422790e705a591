"""`sriovop webhook` as a process: flags, environment, startup errors, live and cached views, SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sriovop.api.v1 import kinds
from sriovop.devcluster import ControlPlane
from sriovop.devcluster.process import free_port
from sriovop.exitcodes import NO_ANSWER  # click usage errors exit with it under `sriovop`
from sriovop.render.webhook_configs import WEBHOOK_RBAC_RULES
from sriovop.runtime import kinds as core
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.webhook.handler import POD_MUTATING_PATH, VALIDATING_PATH
from test.support.webhook_objects import SUPPORTED_NIC_DATA, intel_xxv710, node_state, policy, review
from test.support.webhook_server import Running


@pytest.fixture(scope="module")
def env(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    run = uuid.uuid4().hex[:8]
    client = Client(load_config(str(control_plane.kubeconfig)))
    ns, empty_ns = f"whcli-{run}", f"whcli-empty-{run}"
    nodes: list[str] = []
    for name in (ns, empty_ns):
        client.create(core.NAMESPACE, {"metadata": {"name": name}})
    client.create(core.CONFIG_MAP, {"metadata": {"name": "supported-nic-ids", "namespace": ns},
                                    "data": SUPPORTED_NIC_DATA})
    label = {"whcli/run": run}
    try:
        for i in range(2):
            name = f"whcli-{run}-{i}"
            client.create(core.NODE, {"metadata": {"name": name, "labels": {**label, "whcli/index": str(i)}}})
            nodes.append(name)
            state = node_state(name, [intel_xxv710()], namespace=ns)
            status = state.pop("status")
            created = client.create(kinds.SRIOV_NETWORK_NODE_STATE, state)
            created["status"] = status
            client.update_status(kinds.SRIOV_NETWORK_NODE_STATE, created)
        tmp = tmp_path_factory.mktemp("whcli")
        cert, key = control_plane.issue_serving_cert(["127.0.0.1"]).write(tmp, "serving")
        yield {"client": client, "ns": ns, "empty_ns": empty_ns, "label": label, "cert": cert, "key": key,
               "kubeconfig": str(control_plane.kubeconfig), "ca": control_plane.ca_pem, "nodes": nodes, "run": run}
    finally:
        for name in nodes:
            with contextlib.suppress(NotFound):
                client.delete(core.NODE, name)
        for name in (ns, empty_ns):
            with contextlib.suppress(NotFound):
                client.delete(core.NAMESPACE, name)


def _start(env: dict[str, object], namespace: str, *extra: str, environ: dict[str, str] | None = None,
           ) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    argv = [sys.executable, "-m", "sriovop.cli", "webhook", "--port", str(port), "--bind-address", "127.0.0.1",
            "--tls-cert-file", str(env["cert"]), "--tls-private-key-file", str(env["key"]),
            "--kubeconfig", str(env["kubeconfig"]), "--namespace", namespace, *extra]
    child_env = {k: v for k, v in os.environ.items() if k not in ("DEV_MODE", "NAMESPACE", "KUBECONFIG")}
    child_env.update(environ or {})
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env,
                            cwd=Path(__file__).resolve().parents[3])
    return proc, port


def _wait_ready(proc: subprocess.Popen[str], running: Running, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        try:
            conn = running.connection(timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except (OSError, ssl.SSLError):
            time.sleep(0.2)
    pytest.fail("sriovop webhook never became ready")


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("sriovop webhook did not exit within 15 s of SIGTERM")


@pytest.mark.parametrize("mode", ["--no-cache", "--cache"])
def test_serves_reviews_from_the_cluster_and_stops_on_sigterm(env: dict[str, object], mode: str) -> None:
    ns = str(env["ns"])
    proc, port = _start(env, ns, mode)
    running = Running(None, env["ca"], "127.0.0.1", port)  # type: ignore[arg-type]
    try:
        _wait_ready(proc, running)
        ok = policy(namespace=ns, nodeSelector=env["label"], nicSelector={"pfNames": ["ens1f0"]})
        status, answer = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", ok))
        assert status == 200 and answer["response"]["allowed"] is True, answer
        too_many = policy(namespace=ns, nodeSelector=env["label"], numVfs=65)
        status, answer = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", too_many))
        assert answer["response"]["allowed"] is False
        assert "numVfs(65) in CR p1 exceed the maximum allowed value(64)" in answer["response"]["status"]["message"]
        # A node labelled after start is seen (live read, or the informer's watch).
        client: Client = env["client"]  # type: ignore[assignment]
        node = client.get(core.NODE, str(env["nodes"][0]))  # type: ignore[index]
        node["metadata"]["labels"][f"late-{mode}"] = "yes"
        client.update(core.NODE, node)
        late = policy(namespace=ns, nodeSelector={f"late-{mode}": "yes"})
        deadline = time.monotonic() + 10
        while True:
            answer = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", late))[1]
            if answer["response"]["allowed"]:
                break
            assert "no matched node" in answer["response"]["status"]["message"]
            assert time.monotonic() < deadline, "the relabelled node was never seen"
            time.sleep(0.2)
    finally:
        code = _stop(proc)
    _, stderr = proc.communicate()
    assert code == 0, stderr[-2000:]
    assert "webhook_serving" in stderr and "webhook_stopped" in stderr


def test_dev_mode_from_environment(env: dict[str, object]) -> None:
    ns = str(env["ns"])
    proc, port = _start(env, ns, environ={"DEV_MODE": "TRUE"})
    running = Running(None, env["ca"], "127.0.0.1", port)  # type: ignore[arg-type]
    try:
        _wait_ready(proc, running)
        odd = policy(namespace=ns, nodeSelector=env["label"], nicSelector={"vendor": "abcd"})
        message = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", odd))[1]["response"]["status"]
        assert "no supported NIC is selected" in message["message"]  # static vendor check skipped
    finally:
        assert _stop(proc) == 0


def test_exits_with_a_clear_error_without_the_supported_nic_configmap(env: dict[str, object]) -> None:
    proc, _ = _start(env, str(env["empty_ns"]))
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert f"ConfigMap {env['empty_ns']}/supported-nic-ids does not exist" in stderr, stderr[-2000:]


def test_exits_with_a_clear_error_for_an_empty_resource_prefix(env: dict[str, object]) -> None:
    proc, _ = _start(env, str(env["ns"]), environ={"RESOURCE_PREFIX": ""})
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == NO_ANSWER and "RESOURCE_PREFIX" in stderr, stderr[-2000:]


def test_cached_mode_reloads_the_supported_nic_list_from_its_watch(env: dict[str, object]) -> None:
    ns = str(env["ns"])
    proc, port = _start(env, ns, "--cache")
    running = Running(None, env["ca"], "127.0.0.1", port)  # type: ignore[arg-type]
    odd = policy(namespace=ns, nodeSelector=env["label"], nicSelector={"vendor": "abcd", "deviceID": "0001"})
    try:
        _wait_ready(proc, running)
        message = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", odd))[1]["response"]["status"]
        assert "vendor abcd is not supported" in message["message"]
        client: Client = env["client"]  # type: ignore[assignment]
        client.patch(core.CONFIG_MAP, "supported-nic-ids", {"data": {"Acme_x1": "abcd 0001 0002"}}, ns)
        deadline = time.monotonic() + 10
        while True:
            message = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", odd))[1]["response"]["status"]
            if "vendor abcd is not supported" not in message["message"]:
                assert "no supported NIC is selected" in message["message"], message
                break
            assert time.monotonic() < deadline, "the watch never delivered the new supported NIC"
            time.sleep(0.2)
    finally:
        assert _stop(proc) == 0


@pytest.mark.parametrize("mode", ["--no-cache", "--cache"])
def test_runs_with_only_the_documented_permissions(env: dict[str, object], control_plane: ControlPlane,
                                                   mode: str) -> None:
    client: Client = env["client"]  # type: ignore[assignment]
    user = f"sriovop-webhook-{env['run']}"
    role = {"metadata": {"name": user}, "rules": [dict(r) for r in WEBHOOK_RBAC_RULES]}
    binding = {"metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    with contextlib.suppress(ApiError):
        client.create(core.CLUSTER_ROLE, role)
    with contextlib.suppress(ApiError):
        client.create(core.CLUSTER_ROLE_BINDING, binding)
    restricted = {**env, "kubeconfig": str(control_plane.mint_user(user))}
    ns = str(env["ns"])
    proc, port = _start(restricted, ns, mode)
    running = Running(None, env["ca"], "127.0.0.1", port)  # type: ignore[arg-type]
    try:
        _wait_ready(proc, running)
        ok = policy(namespace=ns, nodeSelector=env["label"])
        answer = running.post(VALIDATING_PATH, review("SriovNetworkNodePolicy", ok))[1]
        assert answer["response"]["allowed"] is True, answer
        pod = {"metadata": {"name": "p", "namespace": ns,
                            "annotations": {"k8s.v1.cni.cncf.io/networks": "absent"}},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        answer = running.post(POD_MUTATING_PATH, review("Pod", pod, group="", namespace=ns))[1]
        assert f"network-attachment-definition {ns}/absent not found" in answer["response"]["status"]["message"]
    finally:
        assert _stop(proc) == 0


def test_without_permissions_it_refuses_to_start(env: dict[str, object], control_plane: ControlPlane) -> None:
    nobody = {**env, "kubeconfig": str(control_plane.mint_user(f"nobody-{env['run']}"))}
    proc, _ = _start(nobody, str(env["ns"]))
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "supported-nic-ids" in stderr and "forbidden" in stderr.lower(), stderr[-2000:]
