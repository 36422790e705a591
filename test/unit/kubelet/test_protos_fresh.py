"""The checked-in gRPC modules are what `sriovop gen protos` generates from sriovop/kubelet/proto/ (host:
none). Edit a .proto without regenerating, or edit a generated file by hand, and this fails."""

from __future__ import annotations

from pathlib import Path

from sriovop.kubelet import deviceplugin_v1beta1_pb2 as dp
from sriovop.kubelet import pluginregistration_v1_pb2 as reg
from sriovop.kubelet import podresources_v1_pb2 as podres
from sriovop.kubelet.protogen import PACKAGE_DIR, generate, stale


def test_checked_in_stubs_match_the_protos() -> None:
    assert stale() == [], "run `sriovop gen protos`"


def test_a_changed_proto_is_detected(tmp_path: Path) -> None:
    protos = tmp_path / "proto"
    protos.mkdir()
    for src in (PACKAGE_DIR / "proto").glob("*.proto"):
        text = src.read_text()
        if src.name.startswith("deviceplugin"):
            text = text.replace("bool read_only = 3;", "bool read_only = 3;\n  string extra = 4;")
        (protos / src.name).write_text(text)
    assert stale(PACKAGE_DIR, protos) == ["deviceplugin_v1beta1_pb2.py", "deviceplugin_v1beta1_pb2.pyi"]
    assert set(generate(protos)) == {p.name for p in PACKAGE_DIR.iterdir()
                                     if p.name.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))}


def test_wire_names_are_the_kubelets() -> None:
    """The full method and message names the kubelet uses on the wire (package, service, field numbers)."""
    assert dp.DESCRIPTOR.package == "v1beta1" and podres.DESCRIPTOR.package == "v1"
    assert reg.DESCRIPTOR.package == "pluginregistration"
    plugin = dp.DESCRIPTOR.services_by_name["DevicePlugin"]
    assert [m.name for m in plugin.methods] == ["GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation",
                                                "Allocate", "PreStartContainer"]
    response = dp.DESCRIPTOR.message_types_by_name["ContainerAllocateResponse"]
    assert {f.name: f.number for f in response.fields} == {"envs": 1, "mounts": 2, "devices": 3, "annotations": 4,
                                                           "cdi_devices": 5}
    lister = podres.DESCRIPTOR.services_by_name["PodResourcesLister"]
    assert [m.full_name for m in lister.methods] == ["v1.PodResourcesLister.List",
                                                     "v1.PodResourcesLister.GetAllocatableResources",
                                                     "v1.PodResourcesLister.Get"]
