"""The ADD/DEL handler end to end over fake plugin executables and an in-memory API reader (no netns;
host: this machine's filesystem under tmp_path). The real-kubelet version is
test/integration/cluster/test_attach_cluster.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION
from sriovop.cni.attach import plugin, status
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import Kind
from test.support.cni_fakeplugin import PluginDir


class FakeApi:
    """Pods and NADs by (kind, namespace, name); update_status records what was written."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.status_writes: list[dict[str, Any]] = []

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return json.loads(json.dumps(self.objects[(kind.kind, namespace or "", name)]))
        except KeyError:
            raise NotFound(404, f"{kind.kind} {namespace}/{name} not found") from None

    def update_status(self, kind: Kind, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.status_writes.append(obj)
        return obj

    def pod(self, annotation: str) -> None:
        self.objects[("Pod", "ns", "web")] = {"metadata": {"name": "web", "namespace": "ns", "uid": "uid-1",
                                                           "annotations": {"k8s.v1.cni.cncf.io/networks": annotation}}}

    def nad(self, name: str, config: dict[str, Any] | str, resource: str = "") -> None:
        meta: dict[str, Any] = {"name": name, "namespace": "ns"}
        if resource:
            meta["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": resource}
        text = config if isinstance(config, str) else json.dumps(config)
        self.objects[(NETWORK_ATTACHMENT_DEFINITION.kind, "ns", name)] = {"metadata": meta, "spec": {"config": text}}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(plugin, "client_for", lambda _path: fake)
    return fake


def _env(plugins: PluginDir, command: str, container: str = "c0ffee") -> dict[str, str]:
    return {"CNI_COMMAND": command, "CNI_CONTAINERID": container, "CNI_NETNS": "/var/run/netns/x",
            "CNI_IFNAME": "eth0", "CNI_PATH": str(plugins.bin),
            "CNI_ARGS": f"K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID={container};"
                        "K8S_POD_UID=uid-1"}


def _stdin(plugins: PluginDir, tmp_path: Path) -> bytes:
    default = {"cniVersion": "1.0.0", "name": "podnet", "plugins": [
        {"type": "bridgeish", "log": str(plugins.log), "address": "10.88.0.7/24"}]}
    return json.dumps({"cniVersion": "1.0.0", "name": "sriovop-attach-network", "type": "sriovop-attach",
                       "kubeconfig": str(tmp_path / "kubeconfig"), "delegates": [default],
                       "cacheDir": str(tmp_path / "cache"), "kubeletRootDir": str(tmp_path / "kubelet"),
                       "deviceInfoDir": str(tmp_path / "devinfo")}).encode()


def _vf_nad(plugins: PluginDir, **extra: Any) -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": "vfnet", "type": "vfish", "log": str(plugins.log),
            "address": "192.168.5.9/24", "capabilities": {"mac": True, "deviceID": True}, **extra}


def _checkpoint(tmp_path: Path, ids: list[str]) -> None:
    path = tmp_path / "kubelet" / "device-plugins" / "kubelet_internal_checkpoint"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"Data": {"PodDeviceEntries": [
        {"PodUID": "uid-1", "ContainerName": "main", "ResourceName": "intel.com/vf", "DeviceIDs": {"0": ids}}]}}))


def test_add_runs_default_then_attachments_writes_status_and_del_undoes_it(
        plugins: PluginDir, api: FakeApi, tmp_path: Path) -> None:
    plugins.install("bridgeish", "vfish")
    api.pod('[{"name": "vf", "mac": "02:aa:bb:cc:dd:ee", "cni-args": {"vlan": 5}}, {"name": "vf", "interface": "x1"}]')
    api.nad("vf", _vf_nad(plugins), resource="intel.com/vf")
    _checkpoint(tmp_path, ["0000:03:02.2", "0000:03:02.10"])
    info = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "0000:03:02.10"}}
    dp = tmp_path / "devinfo" / "dp" / "intel.com-vf-0000:03:02.10-device.json"
    dp.parent.mkdir(parents=True)
    dp.write_text(json.dumps(info))

    out, code = plugin.handle(_env(plugins, "ADD"), _stdin(plugins, tmp_path))

    assert code == 0, out
    assert json.loads(out)["ips"] == [{"address": "10.88.0.7/24", "interface": 0}]  # the default network's
    calls = plugins.calls()
    assert [(c["stdin"]["type"], c["env"]["CNI_IFNAME"]) for c in calls] == [
        ("bridgeish", "eth0"), ("vfish", "net1"), ("vfish", "x1")]
    first, second = calls[1]["stdin"], calls[2]["stdin"]
    assert (first["deviceID"], first["pciBusID"]) == ("0000:03:02.10", "0000:03:02.10")  # string order
    assert second["deviceID"] == "0000:03:02.2"
    assert first["args"] == {"cni": {"vlan": 5}} and "args" not in second
    info_file = tmp_path / "devinfo" / "cni" / "ns-vf-c0ffee_net1"
    assert first["runtimeConfig"] == {"mac": "02:aa:bb:cc:dd:ee", "deviceID": "0000:03:02.10"}
    assert json.loads(info_file.read_text()) == info
    assert calls[1]["env"]["CNI_ARGS"] == ("IgnoreUnknown=true;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;"
                                           "K8S_POD_INFRA_CONTAINER_ID=c0ffee;K8S_POD_UID=uid-1")
    [written] = api.status_writes
    statuses = json.loads(written["metadata"]["annotations"][status.ANNOTATION])
    assert [(s["name"], s.get("interface"), s.get("default", False), s["ips"]) for s in statuses] == [
        ("podnet", "eth0", True, ["10.88.0.7"]), ("ns/vf", "net1", False, ["192.168.5.9"]),
        ("ns/vf", "x1", False, ["192.168.5.9"])]
    assert statuses[1]["device-info"] == info
    assert (tmp_path / "cache" / "c0ffee").exists()

    api.objects.clear()  # DEL must not need the API
    out, code = plugin.handle(_env(plugins, "DEL"), _stdin(plugins, tmp_path))
    assert (out, code) == (b"", 0)
    dels = [(c["stdin"]["type"], c["env"]["CNI_IFNAME"]) for c in plugins.calls() if c["command"] == "DEL"]
    assert dels == [("vfish", "x1"), ("vfish", "net1"), ("bridgeish", "eth0")]
    assert not (tmp_path / "cache" / "c0ffee").exists() and not info_file.exists()
    assert plugin.handle(_env(plugins, "DEL"), _stdin(plugins, tmp_path)) == (b"", 0)  # nothing cached


def test_failing_attachment_rolls_back_what_was_added(plugins: PluginDir, api: FakeApi, tmp_path: Path) -> None:
    plugins.install("bridgeish", "vfish", "broken")
    api.pod("good, bad")
    api.nad("good", _vf_nad(plugins))
    api.nad("bad", {"cniVersion": "1.0.0", "name": "bad", "type": "broken", "log": str(plugins.log), "fail": "ADD"})
    out, code = plugin.handle(_env(plugins, "ADD"), _stdin(plugins, tmp_path))
    assert code == 1
    error = json.loads(out)
    assert "network ns/bad (interface net2)" in error["msg"] and "broken refuses" in error["msg"]
    dels = [(c["stdin"]["type"], c["env"]["CNI_IFNAME"]) for c in plugins.calls() if c["command"] == "DEL"]
    assert dels == [("broken", "net2"), ("vfish", "net1"), ("bridgeish", "eth0")]
    assert not (tmp_path / "cache" / "c0ffee").exists()
    assert api.status_writes == []


@pytest.mark.parametrize(("annotation", "config", "field"), [
    ("bad", {"cniVersion": "1.0.0", "name": "x", "plugins": [{"ipam": {}}]},
     "network ns/bad: spec.config.plugins[0].type"),
    ("bad", "{not json", "network ns/bad: spec.config.(root)"),
    ('[{"name": "bad", "mac": "nope"}]', {"type": "vfish"}, "k8s.v1.cni.cncf.io/networks: networks[0].mac"),
    ("missing", {"type": "vfish"}, "network ns/missing: networks[0].name"),
    ('[{"name": "bad", "interface": "eth0"}]', {"type": "vfish"}, "network ns/bad: networks[0].interface"),
])
def test_bad_input_fails_before_any_plugin_runs_naming_the_field(
        plugins: PluginDir, api: FakeApi, tmp_path: Path, annotation: str, config: Any, field: str) -> None:
    plugins.install("bridgeish", "vfish")
    api.pod(annotation)
    api.nad("bad", config)
    out, code = plugin.handle(_env(plugins, "ADD"), _stdin(plugins, tmp_path))
    assert code == 1
    assert field in json.loads(out)["msg"]
    assert plugins.calls() == []


def test_version_and_missing_environment(plugins: PluginDir, tmp_path: Path) -> None:
    out, code = plugin.handle({"CNI_COMMAND": "VERSION"}, b'{"cniVersion": "0.4.0"}')
    assert code == 0 and "1.0.0" in json.loads(out)["supportedVersions"]
    out, code = plugin.handle({"CNI_COMMAND": "ADD", "CNI_IFNAME": "eth0"}, _stdin(plugins, tmp_path))
    assert code == 1
    assert json.loads(out) == {"cniVersion": "1.0.0", "code": 4, "msg": "missing environment",
                               "details": "CNI_CONTAINERID, CNI_PATH, CNI_NETNS"}


def test_check_runs_every_cached_network_with_its_result(plugins: PluginDir, api: FakeApi, tmp_path: Path) -> None:
    plugins.install("bridgeish", "vfish")
    api.pod("vf")
    api.nad("vf", _vf_nad(plugins))
    out, code = plugin.handle(_env(plugins, "CHECK"), _stdin(plugins, tmp_path))
    assert code == 1 and json.loads(out)["code"] == 3  # unknown container: nothing was added
    added, code = plugin.handle(_env(plugins, "ADD"), _stdin(plugins, tmp_path))
    assert code == 0, added
    assert plugin.handle(_env(plugins, "CHECK"), _stdin(plugins, tmp_path)) == (b"", 0)
    checks = [c for c in plugins.calls() if c["command"] == "CHECK"]
    assert [(c["stdin"]["type"], c["env"]["CNI_IFNAME"]) for c in checks] == [("bridgeish", "eth0"), ("vfish", "net1")]
    assert checks[0]["stdin"]["prevResult"] == json.loads(added)
