"""Pod resource injection as upstream's network-resources-injector does it: triggers, counting, the
existing-resources rule and honor-resources, nodeSelector, hugepages, podnetinfo, user injections,
missing NADs, and the exact patches (golden) for the shapes upstream's tests and code describe.

Host: none (in-memory admission reviews against a StaticClusterView).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from sriovop.webhook.admission import Denied
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.control_switches import ControlSwitches, parse_control_switches
from sriovop.webhook.handler import POD_MUTATING_PATH, AdmissionHandler
from sriovop.webhook.pod_networks import NetworkRef, parse_networks
from sriovop.webhook.switches_source import StaticSwitches, WatchedSwitches
from test.support.webhook_objects import NICS, SETTINGS, apply_json_patch, nad, pod, review


def nad_with(name: str, namespace: str, **annotations: str) -> dict[str, Any]:
    out = nad(name, namespace, None)
    out["metadata"]["annotations"] = annotations
    return out


VIEW = StaticClusterView(nads=[
    nad("sriov-a", "apps"), nad("sriov-b", "other", "openshift.io/mlxnics"), nad("macvlan", "apps", None),
    nad("broken", "apps", "intel nics"),
    nad_with("pinned", "apps", **{"k8s.v1.cni.cncf.io/resourceName": "openshift.io/intelnics",
                                  "k8s.v1.cni.cncf.io/nodeSelector": "nic=xxv710, zone"}),
    nad_with("pinned-only", "apps", **{"k8s.v1.cni.cncf.io/nodeSelector": "rack=r1"}),
    nad_with("bad-selector", "apps", **{"k8s.v1.cni.cncf.io/nodeSelector": "a=b=c"}),
    nad_with("two-keys", "apps", **{"k8s.v1.cni.cncf.io/resourceName": "openshift.io/intelnics",
                                    "example.com/rdma": "example.com/rdma_shared"}),
], nics=NICS)

ON = ControlSwitches(hugepage_down_api=True)
HONOR = ControlSwitches(honor_resources=True)


def mutate(p: dict[str, Any], switches: ControlSwitches | None = None, namespace: str = "apps") -> dict[str, Any]:
    body = review("Pod", p, group="", namespace=namespace)
    handler = AdmissionHandler(VIEW, SETTINGS, StaticSwitches(switches))
    status, answer = handler.handle(POD_MUTATING_PATH, json.dumps(body).encode())
    assert status == 200
    return answer["response"]  # type: ignore[no-any-return]


def patch_of(p: dict[str, Any], switches: ControlSwitches | None = None) -> list[dict[str, Any]]:
    response = mutate(p, switches)
    assert response["allowed"] is True, response
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def mutated(p: dict[str, Any], switches: ControlSwitches | None = None) -> dict[str, Any]:
    return apply_json_patch(p, patch_of(p, switches))


def with_resources(p: dict[str, Any], index: int = 0, **kinds: dict[str, str]) -> dict[str, Any]:
    p["spec"]["containers"][index]["resources"] = kinds
    return p


# --- parsing (upstream's "Network selection elements parsing" table) ------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    ("ns1/net1@eth0", [NetworkRef("ns1", "net1", "eth0")]),
    ("net1@eth0", [NetworkRef("apps", "net1", "eth0")]),
    ("net1", [NetworkRef("apps", "net1")]),
    ("ns1/net1", [NetworkRef("ns1", "net1")]),
    ("ns1/net1,net2", [NetworkRef("ns1", "net1"), NetworkRef("apps", "net2")]),
    (" a , other/b@net1,", [NetworkRef("apps", "a"), NetworkRef("other", "b", "net1")]),
    ('[{"name": "net1"},{"name": "net2", "namespace": "ns1"}]',
     [NetworkRef("apps", "net1"), NetworkRef("ns1", "net2")]),
])
def test_parse_networks(value: str, expected: list[NetworkRef]) -> None:
    assert parse_networks(value, "apps") == expected


@pytest.mark.parametrize("value", ["ns1/net1/if1", "net1@if1@if2", "ns/net1,net2,net3@if1@if2", '{"name": "net1"}',
                                   "/a", "a@", "[{]", '[{"namespace": "x"}]', '[{"name": "a", "interface": 3}]'])
def test_parse_networks_rejects(value: str) -> None:
    with pytest.raises(Denied) as info:
        parse_networks(value, "apps")
    assert info.value.field == "metadata.annotations[k8s.v1.cni.cncf.io/networks]"


# --- golden patches ----------------------------------------------------------------------------------

def test_golden_patch_one_network_plain_pod() -> None:
    assert patch_of(pod("p", "apps", "sriov-a")) == [
        {"op": "add", "path": "/spec/containers/0/resources", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/limits", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests/openshift.io~1intelnics", "value": "1"},
        {"op": "add", "path": "/spec/containers/0/resources/limits/openshift.io~1intelnics", "value": "1"},
        {"op": "add", "path": "/spec/containers/0/volumeMounts", "value": []},
        {"op": "add", "path": "/spec/containers/0/volumeMounts/-",
         "value": {"name": "podnetinfo", "readOnly": True, "mountPath": "/etc/podnetinfo"}},
        {"op": "add", "path": "/spec/volumes", "value": []},
        {"op": "add", "path": "/spec/volumes/-", "value": {"name": "podnetinfo", "downwardAPI": {"items": [
            {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}}]}}},
    ]


def test_golden_patch_hugepages_nodeselector_existing_volumes() -> None:
    p = pod("p", "apps", "pinned", volumes=[{"name": "data", "emptyDir": {}}], nodeSelector={"os": "linux"},
            metadata={"labels": {"app": "x"}})
    p["spec"]["containers"][0].update(
        resources={"requests": {"hugepages-1Gi": "2Gi"}, "limits": {"hugepages-1Gi": "2Gi"}},
        env=[{"name": "A", "value": "1"}], volumeMounts=[{"name": "data", "mountPath": "/data"}])
    assert patch_of(p, ON) == [
        {"op": "add", "path": "/spec/containers/0/resources/requests/openshift.io~1intelnics", "value": "1"},
        {"op": "add", "path": "/spec/containers/0/resources/limits/openshift.io~1intelnics", "value": "1"},
        {"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "CONTAINER_NAME", "value": "c0"}},
        {"op": "add", "path": "/spec/containers/0/volumeMounts/-",
         "value": {"name": "podnetinfo", "readOnly": True, "mountPath": "/etc/podnetinfo"}},
        {"op": "add", "path": "/spec/volumes/-", "value": {"name": "podnetinfo", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}},
            {"path": "hugepages_1G_request_c0", "resourceFieldRef": {
                "containerName": "c0", "resource": "requests.hugepages-1Gi", "divisor": "1Mi"}},
            {"path": "hugepages_1G_limit_c0", "resourceFieldRef": {
                "containerName": "c0", "resource": "limits.hugepages-1Gi", "divisor": "1Mi"}},
        ]}}},
        {"op": "add", "path": "/spec/nodeSelector", "value": {"os": "linux", "nic": "xxv710", "zone": ""}},
    ]


# --- counting ----------------------------------------------------------------------------------------

def test_resources_counted_per_attachment_on_first_container_only() -> None:
    out = mutated(pod("p", "apps", "sriov-a, sriov-a@net2, other/sriov-b, macvlan", containers=2))
    first, second = out["spec"]["containers"]
    assert first["resources"] == {
        "requests": {"openshift.io/intelnics": "2", "openshift.io/mlxnics": "1"},
        "limits": {"openshift.io/intelnics": "2", "openshift.io/mlxnics": "1"},
    }
    assert "resources" not in second
    for c in (first, second):
        assert c["volumeMounts"] == [{"name": "podnetinfo", "readOnly": True, "mountPath": "/etc/podnetinfo"}]


def test_same_network_twice_in_json_form_gives_two() -> None:
    out = mutated(pod("p", "apps", '[{"name": "sriov-a"}, {"name": "sriov-a", "interface": "net2"}]'))
    assert out["spec"]["containers"][0]["resources"]["limits"] == {"openshift.io/intelnics": "2"}


def test_every_resource_name_key_counts() -> None:
    switches = ControlSwitches(resource_name_keys=("k8s.v1.cni.cncf.io/resourceName", "example.com/rdma"))
    out = mutated(pod("p", "apps", "two-keys"), switches)
    assert out["spec"]["containers"][0]["resources"]["requests"] == {
        "openshift.io/intelnics": "1", "example.com/rdma_shared": "1"}
    # with the default key only, the second annotation is not a resource
    out = mutated(pod("p", "apps", "two-keys"))
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"openshift.io/intelnics": "1"}


# --- resources the pod already asks for -----------------------------------------------------------------

@pytest.mark.parametrize("where", ["requests", "limits"])
def test_resource_any_container_already_asks_for_is_left_alone(where: str) -> None:
    p = pod("p", "apps", "sriov-a, other/sriov-b", containers=2)
    with_resources(p, 1, **{where: {"openshift.io/intelnics": "3"}})
    out = mutated(p)
    assert out["spec"]["containers"][0]["resources"] == {"requests": {"openshift.io/mlxnics": "1"},
                                                         "limits": {"openshift.io/mlxnics": "1"}}
    assert out["spec"]["containers"][1]["resources"] == {where: {"openshift.io/intelnics": "3"}}
    # the podnetinfo volume still comes: the networks do ask for resources
    assert [v["name"] for v in out["spec"]["volumes"]] == ["podnetinfo"]


def test_all_resources_already_asked_for_adds_no_resource_op() -> None:
    p = with_resources(pod("p", "apps", "sriov-a"), requests={"openshift.io/intelnics": "1"},
                       limits={"openshift.io/intelnics": "1"})
    ops = patch_of(p)
    assert not any("/resources" in op["path"] for op in ops)
    assert any(op["path"] == "/spec/volumes" for op in ops)


def test_honor_resources_adds_to_the_first_containers_value() -> None:
    p = with_resources(pod("p", "apps", "sriov-a, sriov-a"), requests={"openshift.io/intelnics": "1", "cpu": "1"},
                       limits={"openshift.io/intelnics": "3"})
    out = mutated(p, HONOR)
    assert out["spec"]["containers"][0]["resources"] == {
        "requests": {"openshift.io/intelnics": "3", "cpu": "1"}, "limits": {"openshift.io/intelnics": "5"}}


def test_honor_resources_golden() -> None:
    p = with_resources(pod("p", "apps", "sriov-a"), requests={"openshift.io/intelnics": "2"})
    assert patch_of(p, HONOR)[:3] == [
        {"op": "add", "path": "/spec/containers/0/resources/limits", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests/openshift.io~1intelnics", "value": "3"},
        {"op": "add", "path": "/spec/containers/0/resources/limits/openshift.io~1intelnics", "value": "1"},
    ]


def test_honor_resources_denies_a_value_it_cannot_add_to() -> None:
    p = with_resources(pod("p", "apps", "sriov-a"), requests={"openshift.io/intelnics": "1.5"})
    response = mutate(p, HONOR)
    assert response["allowed"] is False
    assert "spec.containers[0].resources.requests[openshift.io/intelnics]: '1.5' is not a whole number" in \
        response["status"]["message"]


# --- nodeSelector ------------------------------------------------------------------------------------

def test_nad_node_selector_is_merged_even_without_resources() -> None:
    out = mutated(pod("p", "apps", "pinned-only", nodeSelector={"rack": "r0", "os": "linux"}))
    assert out["spec"]["nodeSelector"] == {"rack": "r1", "os": "linux"}
    assert "volumes" not in out["spec"]  # no resources asked: no podnetinfo


def test_nad_node_selector_key_only_and_comma_separated() -> None:
    out = mutated(pod("p", "apps", "pinned"))
    assert out["spec"]["nodeSelector"] == {"nic": "xxv710", "zone": ""}


def test_nad_node_selector_with_two_equals_denies_naming_the_nad() -> None:
    response = mutate(pod("p", "apps", "bad-selector"))
    assert response["allowed"] is False
    assert "network-attachment-definition apps/bad-selector has annotation k8s.v1.cni.cncf.io/nodeSelector" in \
        response["status"]["message"]


# --- hugepages ---------------------------------------------------------------------------------------

def hugepage_pod() -> dict[str, Any]:
    p = pod("p", "apps", "sriov-a", containers=3)
    with_resources(p, 0, requests={"hugepages-2Mi": "1Gi", "hugepages-1Gi": "0"})
    with_resources(p, 1, limits={"hugepages-512Ki": "256Mi"})
    p["spec"]["containers"][1]["env"] = [{"name": "CONTAINER_NAME", "value": "c1"}]
    return p


def test_hugepage_items_and_container_name_only_when_switched_on() -> None:
    off = mutated(hugepage_pod())
    assert [i["path"] for i in off["spec"]["volumes"][0]["downwardAPI"]["items"]] == ["annotations"]
    assert all("env" not in c for c in (off["spec"]["containers"][0], off["spec"]["containers"][2]))
    on = mutated(hugepage_pod(), ON)
    items = on["spec"]["volumes"][0]["downwardAPI"]["items"]
    assert [i["path"] for i in items] == ["annotations", "hugepages_2M_request_c0", "hugepages_512K_limit_c1"]
    assert items[2]["resourceFieldRef"] == {"containerName": "c1", "resource": "limits.hugepages-512Ki",
                                            "divisor": "1Mi"}
    c0, c1, c2 = on["spec"]["containers"]
    assert c0["env"] == [{"name": "CONTAINER_NAME", "value": "c0"}]
    assert c1["env"] == [{"name": "CONTAINER_NAME", "value": "c1"}]  # already there: not added twice
    assert "env" not in c2  # no hugepages


# --- podnetinfo --------------------------------------------------------------------------------------

def test_no_patch_without_resources_or_without_networks() -> None:
    assert "patch" not in mutate(pod("p", "apps", "macvlan"))
    assert "patch" not in mutate(pod("p", "apps", None))
    assert "patch" not in mutate(pod("p", "apps", ""))


def test_existing_podnetinfo_volume_and_mounts_are_kept() -> None:
    p = pod("p", "apps", "sriov-a", containers=2, volumes=[{"name": "podnetinfo", "emptyDir": {}}])
    p["spec"]["containers"][1]["volumeMounts"] = [{"name": "podnetinfo", "mountPath": "/mine"}]
    out = mutated(p)
    assert out["spec"]["volumes"] == [{"name": "podnetinfo", "emptyDir": {}}]
    assert out["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/etc/podnetinfo"
    assert out["spec"]["containers"][1]["volumeMounts"] == [{"name": "podnetinfo", "mountPath": "/mine"}]


# --- default network and user-defined injections ---------------------------------------------------------

def test_default_network_annotation_triggers_injection() -> None:
    p = pod("p", "apps", None, metadata={"annotations": {"v1.multus-cni.io/default-network": "other/sriov-b"}})
    out = mutated(p)
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"openshift.io/mlxnics": "1"}


def test_default_network_and_networks_add_up() -> None:
    p = pod("p", "apps", "sriov-a")
    p["metadata"]["annotations"]["v1.multus-cni.io/default-network"] = "sriov-a"
    assert mutated(p)["spec"]["containers"][0]["resources"]["limits"] == {"openshift.io/intelnics": "2"}


def test_default_network_naming_two_networks_is_ignored_as_upstream() -> None:
    p = pod("p", "apps", None, metadata={"annotations": {"v1.multus-cni.io/default-network": "sriov-a, sriov-a"}})
    assert "patch" not in mutate(p)


def test_default_network_missing_nad_denies_naming_the_annotation() -> None:
    p = pod("p", "apps", None, metadata={"annotations": {"v1.multus-cni.io/default-network": "nope"}})
    response = mutate(p)
    assert response["allowed"] is False
    assert "metadata.annotations[v1.multus-cni.io/default-network]: network-attachment-definition apps/nope " \
           "not found" in response["status"]["message"]


INJECT = ControlSwitches(user_injections={"sriov-app": {"k8s.v1.cni.cncf.io/networks": "sriov-a",
                                                         "team": "net"}})


def test_user_defined_injection_names_the_network_and_adds_annotations() -> None:
    p = pod("p", "apps", None, metadata={"labels": {"sriov-app": "True"}})
    out = mutated(p, INJECT)
    assert out["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "sriov-a", "team": "net"}
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"openshift.io/intelnics": "1"}
    # a pod without the label (or with it not "true") is untouched
    assert "patch" not in mutate(pod("p", "apps", None, metadata={"labels": {"sriov-app": "no"}}), INJECT)


def test_pod_annotation_beats_user_defined_injection() -> None:
    p = pod("p", "apps", "other/sriov-b", metadata={"labels": {"sriov-app": "true"}})
    out = mutated(p, INJECT)
    assert out["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "other/sriov-b"
    assert out["metadata"]["annotations"]["team"] == "net"
    assert out["spec"]["containers"][0]["resources"]["requests"] == {"openshift.io/mlxnics": "1"}


# --- denials -----------------------------------------------------------------------------------------

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


# --- the nri-control-switches ConfigMap ------------------------------------------------------------------

FLAGS = ControlSwitches(hugepage_down_api=True)


def config(doc: Any) -> dict[str, str]:
    return {"config.json": doc if isinstance(doc, str) else json.dumps(doc)}


def test_switches_follow_the_configmap_over_the_flags() -> None:
    doc = {"features": {"enableHugePageDownApi": False, "enableHonorExistingResources": True},
           "network-resource-name-keys": "a/b, c/d",
           "user-defined-injections": {"lbl": {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}}}
    switches, problems = parse_control_switches(config(doc), FLAGS, "op")
    assert problems == []
    assert switches == ControlSwitches(hugepage_down_api=False, honor_resources=True, resource_name_keys=("a/b", "c/d"),
                                       user_injections={"lbl": {"k": "v"}})


@pytest.mark.parametrize("data", [None, {}, config({}), config({"features": {}})])
def test_absent_switches_keep_the_flags(data: dict[str, str] | None) -> None:
    assert parse_control_switches(data, FLAGS, "op") == (FLAGS, [])


@pytest.mark.parametrize(("doc", "fragment"), [
    ("{not json", "ConfigMap op/nri-control-switches data[config.json]: is not JSON"),
    ("[]", "data[config.json]: must be a JSON object"),
    ({"features": []}, "data[config.json].features: must be an object"),
    ({"features": {"enableHugePageDownApi": "no"}}, "data[config.json].features.enableHugePageDownApi: must be true "
                                                   "or false, got 'no'; kept true"),
    ({"network-resource-name-keys": []}, "data[config.json].network-resource-name-keys: must be a non-empty list"),
    ({"user-defined-injections": {"x": {"op": "add", "path": "/spec", "value": {}}}},
     "data[config.json].user-defined-injections.x.path: '/spec' is not supported"),
    ({"user-defined-injections": {"x": {"op": "add", "path": "/metadata/annotations", "value": {"a": 1}}}},
     "data[config.json].user-defined-injections.x.value: must be an object of annotation: string"),
])
def test_bad_contents_name_the_field_and_keep_defaults(doc: Any, fragment: str) -> None:
    switches, problems = parse_control_switches(config(doc), FLAGS, "op")
    assert len(problems) == 1 and fragment in problems[0], problems
    assert (switches.hugepage_down_api, switches.honor_resources, switches.resource_name_keys) == (
        FLAGS.hugepage_down_api, FLAGS.honor_resources, FLAGS.resource_name_keys)
    assert dict(switches.user_injections) == {}


def test_a_bad_feature_does_not_undo_a_good_one() -> None:
    doc = {"features": {"enableHugePageDownApi": 1, "enableHonorExistingResources": True}}
    switches, problems = parse_control_switches(config(doc), FLAGS, "op")
    assert (switches.hugepage_down_api, switches.honor_resources) == (True, True)
    assert len(problems) == 1


def test_watched_switches_follow_configmap_events_and_fall_back_to_the_flags() -> None:
    """The informer's handlers call `load`: an add/update installs the ConfigMap's switches, a bad field
    keeps its flag, a delete (None) brings every flag back. The watch itself runs in the integration tests."""
    watched = WatchedSwitches(object(), "op", FLAGS)  # type: ignore[arg-type]  # never started: no client use
    watched.load({"metadata": {"name": "nri-control-switches"},
                  "data": config({"features": {"enableHugePageDownApi": False, "enableHonorExistingResources": 1}})})
    assert (watched.current().hugepage_down_api, watched.current().honor_resources) == (False, False)
    watched.load({"metadata": {"name": "nri-control-switches"}})  # no data: the flags
    assert watched.current() == FLAGS
    watched.load({"metadata": {"name": "nri-control-switches"}, "data": config({"features": {
        "enableHonorExistingResources": True}})})
    assert watched.current().honor_resources is True
    watched.load(None)
    assert watched.current() == FLAGS
