"""The pod injector behind the real kube-apiserver: pods created through admission come back stored with
what upstream's network-resources-injector would have added, and the `nri-control-switches` ConfigMap
switches its features on the fly through the webhook's watch.

Host: this machine's kube-apiserver + etcd (no kubelet: the pods are only stored, never run).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sriovop.api.v1 import kinds
from sriovop.devcluster import ControlPlane
from sriovop.runtime import kinds as core
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.webhook.control_switches import ControlSwitches
from test.support.webhook_cluster import WebhookCluster, webhook_cluster
from test.support.webhook_objects import nad

SWITCHES = "nri-control-switches"


@pytest.fixture(scope="module")
def wc(control_plane: ControlPlane) -> Iterator[WebhookCluster]:
    with webhook_cluster(control_plane) as cluster:
        ns = cluster.apps_ns
        cluster.client.create(kinds.NETWORK_ATTACHMENT_DEFINITION, nad("sriov-net", ns))
        pinned = nad("pinned-net", ns, "openshift.io/mlxnics")
        pinned["metadata"]["annotations"]["k8s.v1.cni.cncf.io/nodeSelector"] = "sriov-nic=cx6"
        cluster.client.create(kinds.NETWORK_ATTACHMENT_DEFINITION, pinned)
        yield cluster


@pytest.fixture
def switches_configmap(wc: WebhookCluster) -> Iterator[Callable[[Any], None]]:
    """Write `nri-control-switches` (a dict becomes config.json; None deletes it); deleted afterwards, and
    the test waits until the webhook's watch has the flags back."""

    def write(doc: Any) -> None:
        if doc is None:
            try:
                wc.client.delete(core.CONFIG_MAP, SWITCHES, wc.operator_ns)
            except NotFound:
                pass
            return
        body = {"metadata": {"name": SWITCHES, "namespace": wc.operator_ns},
                "data": {"config.json": doc if isinstance(doc, str) else json.dumps(doc)}}
        try:
            current = wc.client.get(core.CONFIG_MAP, SWITCHES, wc.operator_ns)
        except NotFound:
            wc.client.create(core.CONFIG_MAP, body)
        else:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            wc.client.update(core.CONFIG_MAP, body)

    yield write
    write(None)
    wait_switches(wc, lambda s: s == ControlSwitches(), "the flags back")


def wait_switches(wc: WebhookCluster, done: Callable[[ControlSwitches], bool], what: str,
                  timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done(wc.switches.current()):
        if time.monotonic() > deadline:
            raise AssertionError(f"webhook switches never showed {what}: {wc.switches.current()}")
        time.sleep(0.05)


def create_pod(wc: WebhookCluster, networks: str | None = None, labels: dict[str, str] | None = None,
               annotations: dict[str, str] | None = None, **containers: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p-{uuid.uuid4().hex[:8]}", "namespace": wc.apps_ns,
                            "annotations": dict(annotations or {})}
    if networks is not None:
        meta["annotations"]["k8s.v1.cni.cncf.io/networks"] = networks
    if labels:
        meta["labels"] = labels
    specs = containers or {"main": {}}
    pod = {"metadata": meta, "spec": {"containers": [{"name": n, "image": "busybox", **extra}
                                                     for n, extra in specs.items()]}}
    return wc.client.create(core.POD, pod)  # type: ignore[no-any-return]


def resources(stored: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return stored["spec"]["containers"][index].get("resources") or {}


def podnetinfo(stored: dict[str, Any]) -> dict[str, Any] | None:
    return next((v for v in stored["spec"].get("volumes") or [] if v["name"] == "podnetinfo"), None)


def test_same_network_twice_gives_two_and_podnetinfo(wc: WebhookCluster) -> None:
    stored = create_pod(wc, "sriov-net, sriov-net@net2")
    assert resources(stored) == {"requests": {"openshift.io/intelnics": "2"},
                                 "limits": {"openshift.io/intelnics": "2"}}
    volume = podnetinfo(stored)
    assert volume is not None and [i["path"] for i in volume["downwardAPI"]["items"]] == ["annotations"]
    assert {"name": "podnetinfo", "mountPath": "/etc/podnetinfo", "readOnly": True} in \
        stored["spec"]["containers"][0]["volumeMounts"]


def test_resource_another_container_asks_for_is_left_alone(wc: WebhookCluster) -> None:
    own = {"resources": {"requests": {"openshift.io/intelnics": "1"}, "limits": {"openshift.io/intelnics": "1"}}}
    stored = create_pod(wc, "sriov-net, pinned-net", main={}, side=own)
    assert resources(stored) == {"requests": {"openshift.io/mlxnics": "1"}, "limits": {"openshift.io/mlxnics": "1"}}
    assert resources(stored, 1) == own["resources"]


def test_nad_node_selector_is_merged(wc: WebhookCluster) -> None:
    pod = {"metadata": {"name": "pinned", "namespace": wc.apps_ns,
                        "annotations": {"k8s.v1.cni.cncf.io/networks": "pinned-net"}},
           "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [{"name": "main", "image": "busybox"}]}}
    stored = wc.client.create(core.POD, pod)
    assert stored["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux", "sriov-nic": "cx6"}


def test_default_network_annotation_triggers_injection(wc: WebhookCluster) -> None:
    stored = create_pod(wc, annotations={"v1.multus-cni.io/default-network": f"{wc.apps_ns}/sriov-net"})
    assert resources(stored)["limits"] == {"openshift.io/intelnics": "1"}
    assert podnetinfo(stored) is not None


def test_missing_nad_denies_naming_it_and_no_resources_means_no_podnetinfo(wc: WebhookCluster) -> None:
    with pytest.raises(ApiError) as info:
        create_pod(wc, "sriov-net, ghost-net")
    assert f"network-attachment-definition {wc.apps_ns}/ghost-net not found" in info.value.message
    wc.client.create(kinds.NETWORK_ATTACHMENT_DEFINITION, nad("plain-net", wc.apps_ns, None))
    stored = create_pod(wc, "plain-net")
    assert podnetinfo(stored) is None and not resources(stored)


HUGEPAGES = {"resources": {"requests": {"hugepages-2Mi": "4Mi", "memory": "64Mi", "openshift.io/intelnics": "1"},
                           "limits": {"hugepages-2Mi": "4Mi", "memory": "64Mi", "openshift.io/intelnics": "1"}}}


def test_configmap_switches_honor_resources_and_hugepages(wc: WebhookCluster,
                                                          switches_configmap: Callable[[Any], None]) -> None:
    before = create_pod(wc, "sriov-net", main=HUGEPAGES)
    assert resources(before)["limits"]["openshift.io/intelnics"] == "1"  # already asked for: left alone
    items = podnetinfo(before)["downwardAPI"]["items"]  # type: ignore[index]
    assert [i["path"] for i in items] == ["annotations"]
    assert not before["spec"]["containers"][0].get("env")

    switches_configmap({"features": {"enableHugePageDownApi": True, "enableHonorExistingResources": True}})
    wait_switches(wc, lambda s: s.honor_resources and s.hugepage_down_api, "both features on")
    after = create_pod(wc, "sriov-net", main=HUGEPAGES)
    assert resources(after)["requests"]["openshift.io/intelnics"] == "2"
    assert resources(after)["limits"]["openshift.io/intelnics"] == "2"
    items = podnetinfo(after)["downwardAPI"]["items"]  # type: ignore[index]
    assert [i["path"] for i in items] == ["annotations", "hugepages_2M_request_main", "hugepages_2M_limit_main"]
    assert items[1]["resourceFieldRef"]["resource"] == "requests.hugepages-2Mi"
    assert {"name": "CONTAINER_NAME", "value": "main"} in after["spec"]["containers"][0]["env"]

    # a bad value keeps that switch at its flag (off); the good one still applies
    switches_configmap({"features": {"enableHugePageDownApi": "yes", "enableHonorExistingResources": True}})
    wait_switches(wc, lambda s: s.honor_resources and not s.hugepage_down_api, "hugepages back at the flag")
    mixed = create_pod(wc, "sriov-net", main=HUGEPAGES)
    assert resources(mixed)["limits"]["openshift.io/intelnics"] == "2"
    assert [i["path"] for i in podnetinfo(mixed)["downwardAPI"]["items"]] == ["annotations"]  # type: ignore[index]


def test_configmap_user_defined_injection(wc: WebhookCluster, switches_configmap: Callable[[Any], None]) -> None:
    switches_configmap({"user-defined-injections": {"sriov-app": {
        "op": "add", "path": "/metadata/annotations",
        "value": {"k8s.v1.cni.cncf.io/networks": "sriov-net", "team": "network"}}}})
    wait_switches(wc, lambda s: "sriov-app" in s.user_injections, "the user-defined injection")
    stored = create_pod(wc, labels={"sriov-app": "true"})
    assert stored["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "sriov-net"
    assert stored["metadata"]["annotations"]["team"] == "network"
    assert resources(stored)["requests"] == {"openshift.io/intelnics": "1"}
    untouched = create_pod(wc, labels={"sriov-app": "false"})
    assert not resources(untouched) and "team" not in (untouched["metadata"].get("annotations") or {})
