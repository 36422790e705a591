"""The guest reaches the host's real kube-apiserver through the QEMU forward, and nothing else.

The forward (`guestfwd` on the guest's management NIC, restrict=on) maps 10.0.2.100:6443 in the guest
to the apiserver's loopback port; the kubeconfig given to the guest carries `tls-server-name:
localhost` so TLS verifies against a SAN of the serving certificate. This is the path the config
daemon will use from inside the guest.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from urllib.parse import urlparse

import pytest
from kubernetes import client

from sriovop.devcluster import ControlPlane
from test.support.kube import api_client
from test.support.vm_guest import GuestFactory, GuestVM, guest_kubeconfig
from test.support.vm_kube_probe import __file__ as PROBE

pytestmark = pytest.mark.e2e

VENV_PY = sys.executable  # the same path inside the guest: it sees the host root


def host_version(cp: ControlPlane) -> dict[str, str]:
    with api_client(cp.kubeconfig) as api:
        return dict(client.VersionApi(api).get_code().to_dict())


def test_guest_gets_version_through_forward_and_nothing_else(
    vm_ready: None, control_plane: ControlPlane, vm_timings: dict[str, float]
) -> None:
    port = urlparse(control_plane.url).port
    assert port
    script = textwrap.dedent(f"""
        import json, socket
        from kubernetes import client, config
        api = config.new_client_from_config(config_file="/run/job/kubeconfig")
        v = client.VersionApi(api).get_code().to_dict()
        print("GUEST-VERSION " + json.dumps(v), flush=True)
        for host, p in (("10.0.2.2", {port}), ("10.0.2.100", 6444), ("127.0.0.1", {port})):
            s = socket.socket(); s.settimeout(5)
            try:
                s.connect((host, p)); print(f"GUEST-REACHED {{host}}:{{p}}")
            except OSError as e:
                print(f"GUEST-UNREACHABLE {{host}}:{{p}} {{e.__class__.__name__}}")
            finally:
                s.close()
    """)
    vm = GuestVM(igb=1, apiserver_port=port, files={
        "kubeconfig": guest_kubeconfig(control_plane.kubeconfig), "probe.py": script})
    assert vm.files["kubeconfig"] != control_plane.kubeconfig.read_text()
    guest = vm.start(f"exec {VENV_PY} /run/job/probe.py", timeout=300)
    rc, console = guest.wait(330)
    out = guest.output
    assert rc == 0, f"guest exited {rc}\n{console[-4000:]}"
    lines = [ln for ln in out.splitlines() if ln.startswith("GUEST-VERSION ")]
    assert len(lines) == 1, console[-4000:]
    assert json.loads(lines[0].split(" ", 1)[1]) == host_version(control_plane)
    # restrict=on: the host (10.0.2.2), unforwarded ports and the guest's own loopback are closed.
    assert "GUEST-REACHED" not in out, out
    for target in (f"10.0.2.2:{port}", "10.0.2.100:6444", f"127.0.0.1:{port}"):
        assert f"GUEST-UNREACHABLE {target}" in out, out
    assert guest.exited_at is not None
    vm_timings["apiserver_version_run_total_seconds"] = guest.exited_at - guest.started


def test_long_lived_guest_command_talks_to_apiserver_until_stopped(
    cluster_guest: GuestFactory, control_plane: ControlPlane, namespace: str, vm_timings: dict[str, float]
) -> None:
    hostname = "e2e-node-1"
    vm = cluster_guest(node=hostname)
    t0 = time.monotonic()
    # The guest's own limit outlasts every step's deadline together (240 + 60 + 60 s) with room for the
    # host's API calls in between: at 400 s, a guest slowed by a busy machine was killed (rc 124) while
    # it stopped, after each step had kept its own deadline.
    with vm.start(f"exec {VENV_PY} {PROBE} /run/job/kubeconfig {namespace}", timeout=600) as guest:
        guest.wait_for(rf"PROBE-CREATED {namespace}/{hostname}", timeout=240)
        vm_timings["guest_client_first_write_seconds"] = time.monotonic() - t0
        with api_client(control_plane.kubeconfig) as api:
            core = client.CoreV1Api(api)
            cm = core.read_namespaced_config_map(hostname, namespace)
            assert cm.data == {"from": "guest"}
            core.patch_namespaced_config_map(hostname, namespace, {"data": {"reply": "pong"}})
        guest.wait_for(r"PROBE-REPLY pong", timeout=60)
        rc, console = guest.stop(timeout=60)
    assert rc == 0, f"guest exited {rc}\n{console[-4000:]}"
    assert "PROBE-TERMINATED" in guest.output, console[-4000:]
    assert "sriovop-init: stop requested" in console
