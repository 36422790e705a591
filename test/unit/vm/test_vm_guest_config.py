"""Pure logic of the e2e guest helper: the guest kubeconfig rewrite and GuestVM's input checks."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from test.support.vm_guest import GuestVM, guest_kubeconfig


def kubeconfig(tmp_path: Path, user: dict[str, str], cluster_extra: dict[str, str] | None = None) -> Path:
    ca = base64.b64encode(b"CA").decode()
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:41234",
                                               "certificate-authority-data": ca, **(cluster_extra or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_server_points_at_forward_and_tls_names_a_certificate_san(tmp_path: Path) -> None:
    user = {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}
    out = yaml.safe_load(guest_kubeconfig(kubeconfig(tmp_path, user)))
    (cluster,) = out["clusters"]
    assert cluster["cluster"]["server"] == "https://10.0.2.100:6443"
    assert cluster["cluster"]["tls-server-name"] == "localhost"
    assert cluster["cluster"]["certificate-authority-data"] == base64.b64encode(b"CA").decode()
    assert out["users"][0]["user"] == user
    assert out["current-context"] == "c"


@pytest.mark.parametrize("key", ["client-certificate", "client-key", "token-file"])
def test_user_credentials_on_host_paths_are_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match=f"user 'u': {key} is a file path"):
        guest_kubeconfig(kubeconfig(tmp_path, {key: "/tmp/x"}))


def test_ca_on_host_path_is_refused(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, {"token": "t"}, {"certificate-authority": "/tmp/ca.crt"})
    with pytest.raises(ValueError, match="cluster 'k': certificate-authority must be embedded"):
        guest_kubeconfig(path)


@pytest.mark.parametrize("kwargs, message", [
    ({"igb": 5}, "igb: expected 0..4 PFs, got 5"),
    ({"igb": -1}, "igb: expected 0..4 PFs, got -1"),
    ({"files": {"cmd": "x"}}, "files: 'cmd' must be a plain file name"),
    ({"files": {"a/b": "x"}}, "files: 'a/b' must be a plain file name"),
    ({"files": {"": "x"}}, "files: '' must be a plain file name"),
    ({"accel": "hvf"}, "accel: expected auto, kvm or tcg, got 'hvf'"),
    ({"env": {"A-B": "1"}}, "env: 'A-B' is not a shell variable name"),
])
def test_bad_guest_settings_name_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as exc:
        GuestVM(**kwargs)  # type: ignore[arg-type]
    assert message in str(exc.value)


def test_valid_settings_are_kept() -> None:
    vm = GuestVM(igb=2, apiserver_port=6443, env={"NODE_NAME": "n1"}, files={"kubeconfig": "x"})
    assert (vm.igb, vm.apiserver_port, vm.env, vm.files) == (2, 6443, {"NODE_NAME": "n1"}, {"kubeconfig": "x"})
