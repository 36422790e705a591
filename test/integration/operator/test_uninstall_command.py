"""`sriovop uninstall` (the chart's pre-delete hook) against the shared control plane: it deletes
`default` and returns once the operator's finalizer is gone; it fails, naming the finalizer, when no
operator removes it. The test plays the operator (removes the finalizer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from test.support.operator_drain import client_for
from test.support.poll import wait_for

REPO = Path(__file__).resolve().parents[3]


def _uninstall(kubeconfig: Path, namespace: str, timeout: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "sriovop.cli", "uninstall", "--kubeconfig", str(kubeconfig),
                             "--namespace", namespace, "--timeout", str(timeout), "--poll-interval", "0.2",
                             "--log-format", "console"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def _config(namespace: str) -> dict[str, object]:
    return {"metadata": {"name": "default", "namespace": namespace, "finalizers": [consts.OPERATOR_CONFIG_FINALIZER]},
            "spec": {}}


def test_waits_for_the_operator_to_release_default(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    client.create(SRIOV_OPERATOR_CONFIG, _config(namespace))
    proc = _uninstall(kubeconfig, namespace, 120)
    wait_for(lambda: client.get(SRIOV_OPERATOR_CONFIG, "default", namespace)["metadata"].get("deletionTimestamp"),
             60, "default marked for deletion")
    assert proc.poll() is None, "returned while the finalizer was still there"
    client.patch(SRIOV_OPERATOR_CONFIG, "default", {"metadata": {"finalizers": None}}, namespace)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-2000:]
    assert "uninstalled" in stderr
    # Nothing left: a second run has nothing to do.
    again = _uninstall(kubeconfig, namespace, 10)
    _, stderr = again.communicate(timeout=60)
    assert again.returncode == 0 and "nothing to uninstall" in stderr, stderr[-2000:]


def test_fails_naming_the_finalizer_when_no_operator_releases_it(kubeconfig: Path, namespace: str) -> None:
    client = client_for(kubeconfig)
    client.create(SRIOV_OPERATOR_CONFIG, _config(namespace))
    try:
        proc = _uninstall(kubeconfig, namespace, 2)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 1, stderr[-2000:]
        assert f"still exists after 2s with finalizers ['{consts.OPERATOR_CONFIG_FINALIZER}']" in stderr
        assert "is the operator running?" in stderr
    finally:
        client.patch(SRIOV_OPERATOR_CONFIG, "default", {"metadata": {"finalizers": None}}, namespace)
