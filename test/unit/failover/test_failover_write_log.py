"""The operator's write log names what was written, from the request path alone."""

from __future__ import annotations

from sriovop.operator.fencing import describe_path


def test_namespaced_group_object_with_subresource() -> None:
    assert describe_path("/apis/sriovnetwork.openshift.io/v1/namespaces/op/sriovnetworks/net-01/status") == {
        "resource": "sriovnetworks", "namespace": "op", "name": "net-01", "subresource": "status"}


def test_core_collection_for_a_create() -> None:
    assert describe_path("/api/v1/namespaces/op/configmaps?fieldManager=x") == {
        "resource": "configmaps", "namespace": "op", "name": "", "subresource": ""}


def test_cluster_scoped_objects_and_namespaces_themselves() -> None:
    assert describe_path("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hook") == {
        "resource": "validatingwebhookconfigurations", "namespace": "", "name": "hook", "subresource": ""}
    assert describe_path("/api/v1/namespaces/op") == {
        "resource": "namespaces", "namespace": "", "name": "op", "subresource": ""}
    assert describe_path("/api/v1/nodes/n1") == {"resource": "nodes", "namespace": "", "name": "n1",
                                                 "subresource": ""}
