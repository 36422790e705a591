"""How the network controller maps Namespace and NAD events back to network CRs."""

from __future__ import annotations

from typing import Any

from sriovop.api.v1.kinds import OVS_NETWORK, SRIOV_NETWORK
from sriovop.controllers.networks import NETWORK_NAMESPACE_FIELD, NetworkReconciler, network_namespace_of
from sriovop.runtime.controller import Request
from sriovop.runtime.kinds import Kind


class IndexedReader:
    """A reader answering only indexed lists, as the manager's cache does."""

    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs = objs
        self.calls: list[tuple[Kind, dict[str, str]]] = []

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Any = None,
             field_selector: Any = None) -> list[dict[str, Any]]:
        self.calls.append((kind, field_selector))
        ((field, value),) = field_selector.items()
        assert field == NETWORK_NAMESPACE_FIELD
        return [o for o in self.objs if network_namespace_of(o) == value]


def net(name: str, ns: str, target: str | None) -> dict[str, Any]:
    spec = {"resourceName": "r"} | ({"networkNamespace": target} if target else {})
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_namespace_creation_maps_through_the_index() -> None:
    reader = IndexedReader([net("a", "op", "blue"), net("b", "op", "green"), net("c", "op", "blue"),
                            net("d", "op", None)])
    r = NetworkReconciler(SRIOV_NETWORK, client=None, reader=reader, namespace="op", resource_prefix="p")
    assert sorted(r.map_namespace({"metadata": {"name": "blue"}}), key=str) == [Request("op", "a"), Request("op", "c")]
    assert reader.calls == [(SRIOV_NETWORK, {NETWORK_NAMESPACE_FIELD: "blue"})]
    assert list(r.map_namespace({"metadata": {"name": "red"}})) == []


def test_nad_maps_to_same_name_here_operator_namespace_and_owner() -> None:
    r = NetworkReconciler(OVS_NETWORK, client=None, reader=None, namespace="op", resource_prefix="p")
    nad = {"metadata": {"name": "x", "namespace": "apps", "annotations": {
        "sriovnetwork.openshift.io/owner-ref": "OVSNetwork.sriovnetwork.openshift.io/team/y"}}}
    assert set(r.map_nad(nad)) == {Request("apps", "x"), Request("op", "x"), Request("team", "y")}
    other_kind = {"metadata": {"name": "x", "namespace": "apps", "annotations": {
        "sriovnetwork.openshift.io/owner-ref": "SriovNetwork.sriovnetwork.openshift.io/team/y"}}}
    assert set(r.map_nad(other_kind)) == {Request("apps", "x"), Request("op", "x")}
