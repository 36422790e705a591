"""Pod resource injection: annotation forms, counting, patch shape, missing NADs."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from sriovop.webhook.admission import Denied
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.handler import POD_MUTATING_PATH, AdmissionHandler
from sriovop.webhook.inject import NetworkRef, parse_networks
from test.support.webhook_objects import NICS, SETTINGS, apply_json_patch, nad, pod, review

VIEW = StaticClusterView(nads=[
    nad("sriov-a", "apps"), nad("sriov-b", "other", "openshift.io/mlxnics"), nad("macvlan", "apps", None),
    nad("broken", "apps", "intel nics"),
], nics=NICS)


def mutate(p: dict[str, Any], namespace: str = "apps") -> dict[str, Any]:
    body = review("Pod", p, group="", namespace=namespace)
    status, answer = AdmissionHandler(VIEW, SETTINGS).handle(POD_MUTATING_PATH, json.dumps(body).encode())
    assert status == 200
    return answer["response"]


def mutated(p: dict[str, Any]) -> dict[str, Any]:
    response = mutate(p)
    assert response["allowed"] is True, response
    if "patch" not in response:
        return p
    return apply_json_patch(p, json.loads(base64.b64decode(response["patch"])))


@pytest.mark.parametrize(("value", "expected"), [
    ("a", [NetworkRef("apps", "a")]),
    (" a , other/b@net1,", [NetworkRef("apps", "a"), NetworkRef("other", "b", "net1")]),
    ('[{"name": "a"}, {"name": "b", "namespace": "other", "interface": "net1"}]',
     [NetworkRef("apps", "a"), NetworkRef("other", "b", "net1")]),
])
def test_parse_networks(value: str, expected: list[NetworkRef]) -> None:
    assert parse_networks(value, "apps") == expected


@pytest.mark.parametrize("value", ["a/b/c", "/a", "a@", "[{]", '[{"namespace": "x"}]', '{"name": "a"}',
                                   '[{"name": "a", "interface": 3}]'])
def test_parse_networks_rejects(value: str) -> None:
    with pytest.raises(Denied) as info:
        parse_networks(value, "apps")
    assert info.value.field == "metadata.annotations[k8s.v1.cni.cncf.io/networks]"


def test_resources_counted_per_attachment_on_first_container_with_podnetinfo() -> None:
    out = mutated(pod("p", "apps", "sriov-a, sriov-a@net2, other/sriov-b, macvlan", containers=2,
                      metadata={"labels": {"app": "x"}}))
    first, second = out["spec"]["containers"]
    assert first["resources"] == {
        "requests": {"openshift.io/intelnics": "2", "openshift.io/mlxnics": "1"},
        "limits": {"openshift.io/intelnics": "2", "openshift.io/mlxnics": "1"},
    }
    assert "resources" not in second
    assert out["spec"]["volumes"] == [{"name": "podnetinfo", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}},
    ]}}]
    for c in (first, second):
        assert c["volumeMounts"] == [{"name": "podnetinfo", "mountPath": "/etc/podnetinfo", "readOnly": True}]


def test_existing_resources_volumes_and_mounts_are_kept() -> None:
    p = pod("p", "apps", '[{"name": "sriov-a"}]', volumes=[{"name": "data", "emptyDir": {}}])
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "hugepages-1Gi": "2Gi"},
                                               "limits": {"hugepages-1Gi": "2Gi"}}
    p["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    out = mutated(p)
    c = out["spec"]["containers"][0]
    assert c["resources"]["requests"] == {"cpu": "1", "hugepages-1Gi": "2Gi", "openshift.io/intelnics": "1"}
    assert c["volumeMounts"][0] == {"name": "data", "mountPath": "/data"}
    assert c["volumeMounts"][1]["name"] == "podnetinfo"
    assert [v["name"] for v in out["spec"]["volumes"]] == ["data", "podnetinfo"]
    paths = [i["path"] for i in out["spec"]["volumes"][1]["downwardAPI"]["items"]]
    assert paths == ["annotations", "hugepages_1G_request_c0", "hugepages_1G_limit_c0"]


def test_networks_without_resources_and_pods_without_networks_are_untouched() -> None:
    assert "patch" not in mutate(pod("p", "apps", "macvlan"))
    assert "patch" not in mutate(pod("p", "apps", None))
    assert "patch" not in mutate(pod("p", "apps", ""))


def test_missing_nad_denies_naming_it() -> None:
    response = mutate(pod("p", "apps", "sriov-a, missing"))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert 'Pod "apps/p" is invalid: metadata.annotations[k8s.v1.cni.cncf.io/networks]:' in message
    assert "network-attachment-definition apps/missing not found" in message


def test_nad_with_an_unusable_resource_name_denies_naming_it() -> None:
    response = mutate(pod("p", "apps", "sriov-a, broken"))
    assert response["allowed"] is False
    assert "network-attachment-definition apps/broken has annotation" in response["status"]["message"]
    assert "'intel nics'" in response["status"]["message"]


def test_only_pod_create_is_mutated() -> None:
    body = review("Pod", pod("p", "apps", "missing"), "UPDATE", old=pod("p", "apps", None), group="",
                  namespace="apps")
    status, answer = AdmissionHandler(VIEW, SETTINGS).handle(POD_MUTATING_PATH, json.dumps(body).encode())
    assert status == 200 and answer["response"]["allowed"] is True
