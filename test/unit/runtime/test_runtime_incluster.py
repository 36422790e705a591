"""In-cluster configuration loaded without the official client (simulated pod: a temp service-account
directory and environment; no API server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sriovop.runtime import incluster
from sriovop.runtime.config import ConfigError, load_config


@pytest.fixture
def sa_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "token").write_text("tok-1\n")
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(incluster, "SERVICE_ACCOUNT_DIR", tmp_path)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return tmp_path


def test_pod_environment_gives_host_ca_and_bearer_token(sa_dir: Path) -> None:
    rest = load_config()
    assert rest.source == "in-cluster"
    assert rest.host == "https://10.0.0.1:443"
    cfg = rest.configuration
    assert isinstance(cfg, incluster.InClusterConfiguration)
    assert cfg.ssl_ca_cert == str(sa_dir / "ca.crt")
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer tok-1"


def test_ipv6_service_host_is_bracketed(sa_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert load_config().host == "https://[fd00::1]:443"


def test_rotated_token_is_read_again_after_the_reread_period(sa_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = incluster.load({"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "6443"})
    (sa_dir / "token").write_text("tok-2")
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer tok-1"  # within the period: cached
    monkeypatch.setattr(incluster, "TOKEN_REREAD_SECONDS", 0.0)
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer tok-2"


@pytest.mark.parametrize(("broken", "message"), [
    ("empty-token", "token file .* is empty"), ("empty-ca", "CA file .* is empty"),
    ("no-ca", "CA file .* does not exist"), ("empty-port", r"\$KUBERNETES_SERVICE_PORT is empty or unset"),
])
def test_unusable_pod_configuration_names_the_part(sa_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                  broken: str, message: str) -> None:
    if broken == "empty-token":
        (sa_dir / "token").write_text("")
    elif broken == "empty-ca":
        (sa_dir / "ca.crt").write_text("")
    elif broken == "no-ca":
        (sa_dir / "ca.crt").unlink()
    else:
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "")
    with pytest.raises(ConfigError, match="in-cluster configuration is unusable: .*" + message):
        load_config()


def test_in_cluster_client_does_not_import_the_official_client(sa_dir: Path) -> None:
    """The point of loading it ourselves: a deployed operator never imports the `kubernetes` package."""
    code = (
        "import sys; from pathlib import Path; from sriovop.runtime import incluster;"
        f"incluster.SERVICE_ACCOUNT_DIR = Path({str(sa_dir)!r});"
        "from sriovop.runtime.config import load_config; from sriovop.runtime.client import Client;"
        "import sriovop.operator.app; c = Client(load_config());"
        "print(c.config.source, 'kubernetes' in sys.modules)"
    )
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["in-cluster", "False"]
