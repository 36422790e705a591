"""The generated CRDs on the real kube-apiserver: samples accepted, each schema rule enforced, status subresource.

Uses the official client's CustomObjectsApi with dict bodies (tests are not the hot path).
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from sriovop.api.v1 import kinds
from sriovop.api.v1.registry import schema_for
from sriovop.api.v1.schema.validate import validate_object
from sriovop.runtime.kinds import Kind
from test.support.api_samples import BAD_CASES, BadCase, load_samples
from test.support.kube import api_client, create_namespace, delete_namespace

SAMPLES = load_samples()


@pytest.fixture(scope="module")
def api(kubeconfig: Path) -> Iterator[client.ApiClient]:
    with api_client(kubeconfig) as a:
        yield a


@pytest.fixture(scope="module")
def shared_ns(kubeconfig: Path) -> Iterator[str]:
    """One namespace for the rejection table: nothing in it is ever stored."""
    name = f"api-reject-{uuid.uuid4().hex[:6]}"
    create_namespace(kubeconfig, name)
    yield name
    delete_namespace(kubeconfig, name)


def _kind(obj: dict[str, Any]) -> Kind:
    return kinds.kind_by_name(obj["kind"])


def create(api: client.ApiClient, obj: dict[str, Any], namespace: str, strict: bool = True) -> dict[str, Any]:
    k = _kind(obj)
    body = copy.deepcopy(obj)
    body["metadata"]["namespace"] = namespace
    result: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        k.group, k.version, namespace, k.plural, body, field_validation="Strict" if strict else None)
    return result


def get(api: client.ApiClient, k: Kind, namespace: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        k.group, k.version, namespace, k.plural, name)
    return result


@pytest.mark.parametrize(("file", "obj"), SAMPLES, ids=[f"{f}:{o['metadata']['name']}" for f, o in SAMPLES])
def test_every_sample_is_accepted_with_strict_field_validation(
        api: client.ApiClient, namespace: str, file: str, obj: dict[str, Any]) -> None:
    stored = create(api, obj, namespace)
    assert stored["spec"] == {**schema_defaults(obj), **obj["spec"]}, f"{file}: the server pruned or changed spec"
    assert "status" not in stored or not stored["status"], "status must be ignored on create"


def schema_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """Top-level spec defaults the server adds for this sample (what our types declare)."""
    spec_schema = schema_for(obj["kind"])
    from sriovop.api.v1.registry import openapi_schema

    props = openapi_schema(spec_schema.kind)["properties"]["spec"]["properties"]
    return {k: p["default"] for k, p in props.items() if "default" in p}


def test_server_applies_the_crd_defaults(api: client.ApiClient, namespace: str) -> None:
    policy = {"apiVersion": kinds.API_VERSION, "kind": "SriovNetworkNodePolicy", "metadata": {"name": "p"},
              "spec": {"resourceName": "r", "nodeSelector": {}, "numVfs": 2, "nicSelector": {"vendor": "8086"}}}
    assert create(api, policy, namespace)["spec"]["deviceType"] == "netdevice"
    net = {"apiVersion": kinds.API_VERSION, "kind": "SriovNetwork", "metadata": {"name": "n"},
           "spec": {"resourceName": "r"}}
    assert create(api, net, namespace)["spec"] == {"resourceName": "r", "logLevel": "info"}


@pytest.mark.parametrize("case", BAD_CASES, ids=[c.id for c in BAD_CASES])
def test_schema_rule_is_enforced_by_the_server(api: client.ApiClient, shared_ns: str, case: BadCase) -> None:
    obj = case.build()
    obj["metadata"]["name"] = case.id[:60]
    # The local validator (derived from the same types) names the same field.
    assert [e.path for e in validate_object(case.kind, obj)] == [case.field]
    with pytest.raises(ApiException) as exc:
        create(api, obj, shared_ns, strict=False)
    assert exc.value.status == 422, exc.value.body
    status = json.loads(exc.value.body)
    fields = [c.get("field") for c in status["details"]["causes"]]
    assert case.field in fields, status["message"]
    assert case.field in status["message"]


def test_unknown_fields_are_rejected_under_strict_and_pruned_otherwise(
        api: client.ApiClient, namespace: str) -> None:
    net = {"apiVersion": kinds.API_VERSION, "kind": "SriovNetwork", "metadata": {"name": "typo"},
           "spec": {"resourceName": "r", "vlanID": 5}}
    with pytest.raises(ApiException) as exc:
        create(api, net, namespace)
    assert exc.value.status == 400
    assert 'unknown field "spec.vlanID"' in json.loads(exc.value.body)["message"]
    stored = create(api, net, namespace, strict=False)
    assert "vlanID" not in stored["spec"]


def _condition(reason: str) -> dict[str, Any]:
    return {"type": "Ready", "status": "True", "reason": reason, "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_status_subresource_separates_spec_and_status(api: client.ApiClient, namespace: str) -> None:
    co = client.CustomObjectsApi(api)
    k = kinds.SRIOV_NETWORK
    net = {"apiVersion": kinds.API_VERSION, "kind": "SriovNetwork", "metadata": {"name": "st"},
           "spec": {"resourceName": "r"}, "status": {"conditions": [_condition("OnCreate")]}}
    created = create(api, net, namespace)
    assert not created.get("status")
    gen = created["metadata"]["generation"]

    # status written on the main resource is ignored
    obj = copy.deepcopy(created)
    obj["status"] = {"conditions": [_condition("OnUpdate")]}
    updated = co.replace_namespaced_custom_object(k.group, k.version, namespace, k.plural, "st", obj)
    assert not updated.get("status")
    assert updated["metadata"]["generation"] == gen  # nothing in spec changed

    # the status subresource writes status and ignores spec
    obj = copy.deepcopy(updated)
    obj["status"] = {"conditions": [_condition("Written")]}
    obj["spec"]["vlan"] = 7
    written = co.replace_namespaced_custom_object_status(k.group, k.version, namespace, k.plural, "st", obj)
    assert written["status"]["conditions"][0]["reason"] == "Written"
    assert "vlan" not in written["spec"]
    assert written["metadata"]["generation"] == gen

    # a metadata-only change does not bump generation; a spec change does
    labelled = co.patch_namespaced_custom_object(k.group, k.version, namespace, k.plural, "st",
                                                 {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == gen
    changed = co.patch_namespaced_custom_object(k.group, k.version, namespace, k.plural, "st",
                                                {"spec": {"vlan": 9}})
    assert changed["metadata"]["generation"] == gen + 1
    assert changed["status"]["conditions"][0]["reason"] == "Written"  # status survives a spec update

    # the status schema is enforced on the subresource too
    bad = copy.deepcopy(changed)
    bad["status"] = {"conditions": [{**_condition("x"), "status": "Maybe"}]}
    with pytest.raises(ApiException) as exc:
        co.replace_namespaced_custom_object_status(k.group, k.version, namespace, k.plural, "st", bad)
    assert exc.value.status == 422 and "status.conditions[0].status" in exc.value.body


def test_node_state_status_keeps_upstream_json_names(api: client.ApiClient, namespace: str) -> None:
    (sample,) = [o for _f, o in SAMPLES if o["kind"] == "SriovNetworkNodeState"]
    k = kinds.SRIOV_NETWORK_NODE_STATE
    created = create(api, sample, namespace)
    obj = copy.deepcopy(created)
    obj["status"] = copy.deepcopy(sample["status"])
    written = client.CustomObjectsApi(api).replace_namespaced_custom_object_status(
        k.group, k.version, namespace, k.plural, sample["metadata"]["name"], obj)
    assert written["status"] == sample["status"]  # nothing pruned: totalvfs, Vfs, Vlan, altNames survive
    assert written["status"]["interfaces"][0]["totalvfs"] == 64
    assert written["status"]["interfaces"][0]["Vfs"][0]["Vlan"] == 0


def _table(api: client.ApiClient, k: Kind, namespace: str) -> dict[str, Any]:
    resp = api.call_api("GET", api.configuration.host + k.collection_path(namespace),
                        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert resp.status == 200
    table: dict[str, Any] = json.loads(resp.read())
    assert table["kind"] == "Table"
    return table


def test_printer_columns_render(api: client.ApiClient, namespace: str) -> None:
    (state,) = [o for _f, o in SAMPLES if o["kind"] == "SriovNetworkNodeState"]
    created = create(api, state, namespace)
    obj = copy.deepcopy(created)
    obj["status"] = {"syncStatus": "InProgress"}
    k = kinds.SRIOV_NETWORK_NODE_STATE
    client.CustomObjectsApi(api).replace_namespaced_custom_object_status(
        k.group, k.version, namespace, k.plural, state["metadata"]["name"], obj)
    table = _table(api, k, namespace)
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Sync Status", "Desired Sync State", "Current Sync State", "Age"]
    assert table["rows"][0]["cells"][:4] == ["worker-0", "InProgress", "Idle", "Idle"]

    net = {"apiVersion": kinds.API_VERSION, "kind": "SriovNetwork", "metadata": {"name": "cols"},
           "spec": {"resourceName": "r"}}
    created = create(api, net, namespace)
    created["status"] = {"conditions": [_condition("NetworkReady")]}
    kn = kinds.SRIOV_NETWORK
    client.CustomObjectsApi(api).replace_namespaced_custom_object_status(
        kn.group, kn.version, namespace, kn.plural, "cols", created)
    table = _table(api, kn, namespace)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Age"]
    assert table["rows"][0]["cells"][:2] == ["cols", "True"]


def test_network_attachment_definition_crd_stores_config(api: client.ApiClient, namespace: str) -> None:
    nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
           "metadata": {"name": "nad", "annotations": {"k8s.v1.cni.cncf.io/resourceName": "openshift.io/r"}},
           "spec": {"config": '{"cniVersion":"1.0.0","name":"nad","type":"sriov","vlan":0}'}}
    stored = create(api, nad, namespace)
    assert stored["spec"]["config"] == nad["spec"]["config"]
    assert get(api, kinds.NETWORK_ATTACHMENT_DEFINITION, namespace, "nad")["metadata"]["annotations"] == \
        nad["metadata"]["annotations"]
