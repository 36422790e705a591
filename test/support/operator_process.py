"""Run a real `sriovop operator` subprocess against the test control plane."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

from sriovop.api.v1 import consts
from sriovop.api.v1.supportednics import supported_nic_ids_configmap
from sriovop.devcluster.process import free_port
from sriovop.render.webhook_configs import Endpoint, injector_webhook_config, operator_webhook_configs
from sriovop.runtime.client import Client
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import CONFIG_MAP, MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION

WEBHOOK_CONFIGS = [(VALIDATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
                   (MUTATING_WEBHOOK_CONFIGURATION, consts.OPERATOR_WEBHOOK_CONFIG_NAME),
                   (MUTATING_WEBHOOK_CONFIGURATION, consts.INJECTOR_WEBHOOK_CONFIG_NAME)]

TEST_IMAGES = {
    "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE": "example.com/sriovop:test",
    "SRIOV_DEVICE_PLUGIN_IMAGE": "example.com/device-plugin:test",
    "SRIOV_CNI_IMAGE": "example.com/sriov-cni:test",
    "SRIOV_INFINIBAND_CNI_IMAGE": "example.com/ib-sriov-cni:test",
    "SRIOV_NETWORK_WEBHOOK_IMAGE": "example.com/sriovop:test",
    "NETWORK_RESOURCES_INJECTOR_IMAGE": "example.com/sriovop:test",
}


def install_failing_webhooks(client: Client) -> None:
    """Our three configurations with failurePolicy Fail, confined to no namespace so that they never
    get in the way of other writes on the shared API server."""
    never = {"matchLabels": {"sriovop-test-never": "never"}}
    endpoint = Endpoint.url("https://127.0.0.1:1", b"-----BEGIN CERTIFICATE-----\n")
    validating, mutating = operator_webhook_configs(endpoint, namespace_selector=never)
    injector = injector_webhook_config(endpoint, failure_policy="Fail", namespace_selector=never)
    remove_webhooks(client)
    for (kind, _name), obj in zip(WEBHOOK_CONFIGS, (validating, mutating, injector), strict=True):
        client.create(kind, obj)


def remove_webhooks(client: Client) -> None:
    for kind, name in WEBHOOK_CONFIGS:
        try:
            client.delete(kind, name)
        except NotFound:
            pass


def failure_policies(client: Client) -> list[str]:
    return [hook["failurePolicy"] for kind, name in WEBHOOK_CONFIGS for hook in client.get(kind, name)["webhooks"]]


def ensure_supported_nics(client: Client, namespace: str) -> None:
    try:
        client.create(CONFIG_MAP, supported_nic_ids_configmap(namespace))
    except Conflict:
        pass


class OperatorProcess:
    def __init__(self, kubeconfig: Path, namespace: str, log_path: Path, *, extra_env: dict[str, str] | None = None,
                 args: list[str] | None = None) -> None:
        self.probe_port = free_port()
        self.metrics_port = free_port()
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "NAMESPACE": namespace,
               "RESOURCE_PREFIX": "openshift.io", **TEST_IMAGES, **(extra_env or {})}
        self.log_path = log_path
        self._log: IO[bytes] = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        cmd = [sys.executable, "-m", "sriovop.cli", "operator", "--log-format", "console",
               "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
               "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}", *(args or [])]
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def log_tail(self, lines: int = 60) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def get(self, path: str, port: int | None = None) -> tuple[int, str]:
        url = f"http://127.0.0.1:{port or self.probe_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"operator exited early with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"operator not ready within {timeout}s:\n{self.log_tail()}")

    def terminate(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"operator did not exit within {timeout}s of {sig}:\n{self.log_tail()}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()
