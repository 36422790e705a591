"""deviceID assignment from the kubelet's allocation (no host: the pod-resources lister is a function
argument and the checkpoint a file under tmp_path)."""

from __future__ import annotations

import json
from pathlib import Path

from sriovop.cni.attach import resources
from sriovop.cni.attach.resources import DeviceAssigner
from sriovop.kubelet.podresources import ContainerDevices, ContainerResources, PodResources

PODS = [
    PodResources("other", "ns", (ContainerResources("c", (ContainerDevices("intel.com/sriov", ("0000:03:02.7",)),)),)),
    PodResources("web", "ns", (
        ContainerResources("a", (ContainerDevices("intel.com/sriov", ("0000:03:02.3", "0000:03:02.10")),)),
        ContainerResources("b", (ContainerDevices("intel.com/sriov", ("0000:03:02.2",)),
                                 ContainerDevices("intel.com/other", ("0000:04:00.1",)))),
    )),
]


def test_devices_of_every_container_of_the_pod_only() -> None:
    assert resources.from_pod_resources(PODS, "ns", "web") == {
        "intel.com/sriov": ["0000:03:02.3", "0000:03:02.10", "0000:03:02.2"], "intel.com/other": ["0000:04:00.1"]}


def test_ids_are_taken_in_string_order_one_per_attachment() -> None:
    assigner = DeviceAssigner(resources.from_pod_resources(PODS, "ns", "web"))
    taken = [assigner.take("intel.com/sriov") for _ in range(4)]
    assert taken == ["0000:03:02.10", "0000:03:02.2", "0000:03:02.3", ""]  # string order, then none left
    assert assigner.take("intel.com/other") == "0000:04:00.1"
    assert assigner.take("intel.com/absent") == ""


def test_pod_resources_socket_is_asked_when_present(tmp_path: Path) -> None:
    socket = tmp_path / "pod-resources" / "kubelet.sock"
    socket.parent.mkdir()
    socket.touch()
    asked: list[Path] = []

    def lister(path: Path) -> list[PodResources]:
        asked.append(path)
        return PODS

    assert resources.pod_devices(tmp_path, "ns", "web", "uid", lister)["intel.com/other"] == ["0000:04:00.1"]
    assert asked == [socket]


def _checkpoint(root: Path, device_ids: object) -> None:
    path = root / "device-plugins" / "kubelet_internal_checkpoint"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"Data": {"PodDeviceEntries": [
        {"PodUID": "uid-1", "ContainerName": "a", "ResourceName": "intel.com/sriov", "DeviceIDs": device_ids,
         "AllocResp": "..."},
        {"PodUID": "uid-2", "ContainerName": "a", "ResourceName": "intel.com/sriov", "DeviceIDs": {"0": ["x"]}},
    ], "RegisteredDevices": {}}, "Checksum": 1}))


def test_checkpoint_by_numa_map_is_the_fallback_when_pod_resources_fails(tmp_path: Path) -> None:
    (tmp_path / "pod-resources").mkdir()
    (tmp_path / "pod-resources" / "kubelet.sock").touch()
    _checkpoint(tmp_path, {"0": ["0000:03:02.1"], "1": ["0000:83:02.1"]})

    def broken(path: Path) -> list[PodResources]:
        raise OSError("connection refused")

    assert resources.pod_devices(tmp_path, "ns", "web", "uid-1", broken) == {
        "intel.com/sriov": ["0000:03:02.1", "0000:83:02.1"]}


def test_pre_1_21_checkpoint_list_and_no_source_at_all(tmp_path: Path) -> None:
    assert resources.pod_devices(tmp_path, "ns", "web", "uid-1") == {}
    _checkpoint(tmp_path, ["0000:03:02.4"])
    assert resources.pod_devices(tmp_path, "ns", "web", "uid-1") == {"intel.com/sriov": ["0000:03:02.4"]}
