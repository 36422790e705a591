"""The webhook behind the real kube-apiserver: registered through caBundle + url, confined to this run's
namespaces, judging what users create with kubectl."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import kinds
from sriovop.devcluster import ControlPlane
from sriovop.runtime import kinds as core
from sriovop.runtime.errors import ApiError, NotFound
from test.support.controllers_harness import network_controllers
from test.support.kubectl import run_kubectl
from test.support.poll import wait_for
from test.support.webhook_cluster import WebhookCluster, webhook_cluster
from test.support.webhook_objects import nad


@pytest.fixture(scope="module")
def wc(control_plane: ControlPlane) -> Iterator[WebhookCluster]:
    with webhook_cluster(control_plane) as cluster:
        # Stored peers for the conflict rules.
        cluster.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, cluster.policy(
            "base", resourceName="base", numVfs=8, nicSelector={"pfNames": ["ens1f0#0-3"]}))
        cluster.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, cluster.policy(
            "base-root", resourceName="baseroot", numVfs=2, nicSelector={"rootDevices": ["0000:5e:00.0"]}))
        yield cluster


def _obj(wc: WebhookCluster, kind: str, ns_role: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    ns = wc.operator_ns if ns_role == "op" else wc.apps_ns
    return {"apiVersion": kinds.API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": ns},
            "spec": spec}


# (id, kind, namespace role, name, spec (policies: overrides of WebhookCluster.policy), field, fragment)
POLICY = "SriovNetworkNodePolicy"
DENIED: list[tuple[str, str, str, str, dict[str, Any], str, str]] = [
    ("rn-chars", POLICY, "op", "p", {"resourceName": "intel.nics"}, "spec.resourceName", "invalid characters"),
    ("rn-dash", POLICY, "op", "p", {"resourceName": "intel-"}, "spec.resourceName", "invalid characters"),
    ("rn-long", POLICY, "op", "p", {"resourceName": "r" * 64}, "spec.resourceName", "at most 63"),
    ("sel-empty", POLICY, "op", "p", {"nicSelector": {}}, "spec.nicSelector", "at least one of these parameters"),
    ("netfilter-mix", POLICY, "op", "p", {"nicSelector": {"netFilter": "openstack/NetworkID:x", "pfNames": ["a"]}},
     "spec.nicSelector.netFilter", "can't be combined"),
    ("netfilter-switchdev", POLICY, "op", "p", {"nicSelector": {"netFilter": "openstack/NetworkID:x"},
                                                "eSwitchMode": "switchdev"}, "spec.eSwitchMode", "netFilter"),
    ("vendor", POLICY, "op", "p", {"nicSelector": {"vendor": "abcd"}}, "spec.nicSelector.vendor",
     "vendor abcd is not supported"),
    ("model", POLICY, "op", "p", {"nicSelector": {"vendor": "8086", "deviceID": "1528"}},
     "spec.nicSelector.deviceID", "vendor/device 8086/1528 is not supported"),
    ("device", POLICY, "op", "p", {"nicSelector": {"deviceID": "beef"}}, "spec.nicSelector.deviceID",
     "device beef is not supported"),
    ("pf-sep", POLICY, "op", "p", {"nicSelector": {"pfNames": ["ens1f1#1#2"]}}, "spec.nicSelector.pfNames[0]",
     "must contain at most one '#'"),
    ("pf-range", POLICY, "op", "p", {"nicSelector": {"pfNames": ["ens1f1#1"]}}, "spec.nicSelector.pfNames[0]",
     "with exactly one '-'"),
    ("pf-start", POLICY, "op", "p", {"nicSelector": {"pfNames": ["ens1f1#x-2"]}}, "spec.nicSelector.pfNames[0]",
     "the first index of the VF range 'x'"),
    ("pf-end", POLICY, "op", "p", {"nicSelector": {"pfNames": ["ens1f1#1-y"]}}, "spec.nicSelector.pfNames[0]",
     "the last index of the VF range 'y'"),
    ("pf-order", POLICY, "op", "p", {"nicSelector": {"pfNames": ["ens1f1#3-2"]}}, "spec.nicSelector.pfNames[0]",
     "the last VF index 2 is smaller than the first 3"),
    ("pf-numvfs", POLICY, "op", "p", {"numVfs": 4, "nicSelector": {"pfNames": ["ens1f1#2-4"]}},
     "spec.nicSelector.pfNames[0]", "the last VF index 4 must be lower than numVfs 4"),
    ("vfio-rdma", POLICY, "op", "p", {"deviceType": "vfio-pci", "isRdma": True}, "spec.isRdma",
     "'deviceType: vfio-pci' conflicts with 'isRdma: true'"),
    ("switchdev-ib", POLICY, "op", "p", {"eSwitchMode": "switchdev", "linkType": "ib"}, "spec.eSwitchMode",
     "only with ethernet links"),
    ("vdpa-vfio", POLICY, "op", "p", {"vdpaType": "virtio", "deviceType": "vfio-pci", "eSwitchMode": "switchdev"},
     "spec.vdpaType", "conflicts with 'virtio'"),
    ("vdpa-legacy", POLICY, "op", "p", {"vdpaType": "vhost"}, "spec.vdpaType", "switchdev mode"),
    ("bridge-legacy", POLICY, "op", "p", {"bridge": {"ovs": {"bridge": {"datapathType": "netdev"}}}},
     "spec.bridge", "software bridge management requires"),
    ("bridge-external", POLICY, "op", "p", {"bridge": {"ovs": {}}, "eSwitchMode": "switchdev",
                                            "externallyManaged": True}, "spec.bridge", "externally managed"),
    ("no-node", POLICY, "op", "p", {"nodeSelector": {"sriovop-webhook-test/run": "nobody"}}, "spec.nodeSelector",
     "no matched node is selected by the nodeSelector in CR p"),
    ("no-nic", POLICY, "op", "p", {"nicSelector": {"pfNames": ["ens9"]}}, "spec.nicSelector",
     "no supported NIC is selected by the nicSelector in CR p"),
    ("unsupported-in-status", POLICY, "op", "p", {"nicSelector": {"pfNames": ["eth7"]}}, "spec.nicSelector",
     "no supported NIC is selected"),
    ("zero-vfs", POLICY, "op", "p", {"numVfs": 0}, "spec.numVfs", "numVfs(0) in CR p is not allowed"),
    ("intel-total", POLICY, "op", "p", {"numVfs": 65}, "spec.numVfs",
     "numVfs(65) in CR p exceed the maximum allowed value(64) interface(ens1f1)"),
    ("mlx-128", POLICY, "op", "p", {"numVfs": 129, "nicSelector": {"pfNames": ["ens2f0"]}}, "spec.numVfs",
     "exceed the maximum allowed value(128)"),
    ("ext-numvfs", POLICY, "op", "p", {"externallyManaged": True, "nicSelector": {"pfNames": ["ens1f1"]}},
     "spec.numVfs", "higher than the virtual functions allocated for the PF externally value(0)"),
    ("vdpa-intel", POLICY, "op", "p", {"vdpaType": "virtio", "eSwitchMode": "switchdev"}, "spec.vdpaType",
     "vendor(8086) in CR p not supported for vdpa"),
    ("overlap", POLICY, "op", "p", {"numVfs": 8, "nicSelector": {"pfNames": ["ens1f0#2-5"]}},
     "spec.nicSelector.pfNames[0]", "VF index range in ens1f0#2-5 is overlapped with existing policy base"),
    ("overlap-altname", POLICY, "op", "p", {"numVfs": 8, "nicSelector": {"pfNames": ["enp59s0f0#3-4"]}},
     "spec.nicSelector.pfNames[0]", "overlapped with existing policy base"),
    ("ext-inconsistent", POLICY, "op", "p", {"numVfs": 8, "externallyManaged": True,
                                             "nicSelector": {"pfNames": ["ens1f0#6-7"]}},
     "spec.externallyManaged", "externallyManage is inconsistent with existing policy base"),
    ("root-device", POLICY, "op", "p", {"resourceName": "other", "nicSelector": {"rootDevices": ["0000:5e:00.0"]}},
     "spec.nicSelector.rootDevices[0]", "root device 0000:5e:00.0 is overlapped with existing policy base-root"),
    ("exclude-topology", POLICY, "op", "p", {"resourceName": "base", "excludeTopology": True}, "spec.excludeTopology",
     "excludeTopology[true] field conflicts with policy [base].ExcludeTopology[false]"),
    ("opconfig-name", "SriovOperatorConfig", "op", "notdefault", {}, "metadata.name",
     "only default SriovOperatorConfig in"),
    ("opconfig-ns", "SriovOperatorConfig", "apps", "default", {}, "metadata.name", "only default SriovOperatorConfig"),
    ("pool-selector-in", "SriovNetworkPoolConfig", "op", "pool",
     {"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "spec.nodeSelector.matchExpressions[0].values", "must be non-empty"),
    ("pool-hwol", "SriovNetworkPoolConfig", "op", "pool", {"maxUnavailable": 1,
                                                          "ovsHardwareOffloadConfig": {"name": "mcp"}},
     "spec.ovsHardwareOffloadConfig", "can't have both parallel configuration"),
    ("pool-negative", "SriovNetworkPoolConfig", "op", "pool", {"maxUnavailable": -2}, "spec.maxUnavailable",
     "negative numbers are not allowed"),
    ("pool-string", "SriovNetworkPoolConfig", "op", "pool", {"maxUnavailable": "two"}, "spec.maxUnavailable",
     "percentage"),
    ("pool-percent", "SriovNetworkPoolConfig", "op", "pool", {"maxUnavailable": "150%"}, "spec.maxUnavailable",
     "between 1% and 100%"),
    ("pool-selector", "SriovNetworkPoolConfig", "op", "pool",
     {"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}},
     "spec.nodeSelector.matchExpressions[0].values", "must be empty"),
    ("net-namespace", "SriovNetwork", "apps", "net", {"resourceName": "x", "networkNamespace": "elsewhere"},
     "spec.networkNamespace", ".Spec.NetworkNamespace field can't be specified"),
    ("ibnet-namespace", "SriovIBNetwork", "apps", "net", {"resourceName": "x", "networkNamespace": "e"},
     "spec.networkNamespace", "can't be specified"),
    ("ovsnet-namespace", "OVSNetwork", "apps", "net", {"resourceName": "x", "networkNamespace": "e"},
     "spec.networkNamespace", "can't be specified"),
]


def test_the_table_is_big_enough() -> None:
    assert len(DENIED) >= 40


@pytest.mark.parametrize(("kind", "ns_role", "name", "spec", "field", "fragment"), [r[1:] for r in DENIED],
                         ids=[r[0] for r in DENIED])
def test_denied(wc: WebhookCluster, kind: str, ns_role: str, name: str, spec: dict[str, Any], field: str,
                fragment: str) -> None:
    obj = wc.policy(name, **spec) if kind == POLICY else _obj(wc, kind, ns_role, name, spec)
    with pytest.raises(ApiError) as info:
        wc.client.create(kinds.kind_by_name(kind), obj, dry_run=True)
    message = info.value.message
    assert 'denied the request' in message, message
    assert f'{kind} "{obj["metadata"]["namespace"]}/{name}" is invalid: {field}: ' in message, message
    assert fragment in message, message


ALLOWED: list[tuple[str, str, str, str, dict[str, Any]]] = [
    ("policy-pf", POLICY, "op", "ok", {}),
    ("policy-range", POLICY, "op", "ok", {"numVfs": 8, "nicSelector": {"pfNames": ["ens1f0#4-7"]}}),
    ("policy-model", POLICY, "op", "ok", {"numVfs": 64, "nicSelector": {"vendor": "8086", "deviceID": "158a",
                                                                      "rootDevices": ["0000:3b:00.1"]}}),
    ("policy-mlx-ib", POLICY, "op", "ok", {"resourceName": "mlx", "numVfs": 128, "linkType": "IB",
                                           "nicSelector": {"pfNames": ["ens2f0#0-9"]}}),
    ("policy-vfio", POLICY, "op", "ok", {"deviceType": "vfio-pci", "mtu": 9000}),
    ("opconfig", "SriovOperatorConfig", "op", "default", {"enableInjector": True, "logLevel": 2}),
    ("pool", "SriovNetworkPoolConfig", "op", "pool", {"maxUnavailable": "25%", "nodeSelector": {
        "matchLabels": {"a": "b"}}}),
    ("net", "SriovNetwork", "op", "net", {"resourceName": "x", "networkNamespace": "anywhere", "vlan": 10,
                                          "ipam": '{"type": "host-local", "subnet": "10.1.0.0/24"}'}),
    ("net-apps", "SriovNetwork", "apps", "net", {"resourceName": "x"}),
    ("ovsnet", "OVSNetwork", "apps", "net", {"resourceName": "x", "bridge": "br-phy"}),
    # Upstream admits and renders these; they get an admission warning (test below) and a SpecWarning
    # condition, Ready as upstream.
    ("net-empty-resource", "SriovNetwork", "op", "net", {"resourceName": ""}),
    ("ibnet-caps-not-bools", "SriovIBNetwork", "apps", "net", {"resourceName": "x", "capabilities": "[true]"}),
    ("net-meta-no-type", "SriovNetwork", "op", "net", {"resourceName": "x", "metaPlugins": '{"sysctl": {}}'}),
    ("net-logfile-escape", "SriovNetwork", "op", "net", {"resourceName": "x", "logFile": "a\\b"}),
    ("ibnet-ipam-no-type", "SriovIBNetwork", "op", "net", {"resourceName": "x", "ipam": '{"type": ""}'}),
    ("ovs-bridge-name", "OVSNetwork", "op", "net", {"resourceName": "x", "bridge": "br 0"}),
    # Upstream admits these too, then fails to render them: a warning here, and the controller renders no
    # NAD (Ready=False NetworkAttachmentDefinitionInvalid).
    ("net-ipam", "SriovNetwork", "op", "net", {"resourceName": "x", "ipam": "{'type': 'dhcp'}"}),
    ("net-caps", "SriovNetwork", "op", "net", {"resourceName": "x", "capabilities": "{mac: true}"}),
    ("ibnet-caps", "SriovIBNetwork", "op", "net", {"resourceName": "x", "capabilities": "infinibandGUID"}),
    ("net-meta", "SriovNetwork", "op", "net", {"resourceName": "x", "metaPlugins": '{"type": "tuning"'}),
    ("net-logfile", "SriovNetwork", "op", "net", {"resourceName": "x", "logFile": 'a"b'}),
    ("ovs-itype", "OVSNetwork", "op", "net", {"resourceName": "x", "interfaceType": "a\"b"}),
]


@pytest.mark.parametrize(("kind", "ns_role", "name", "spec"), [r[1:] for r in ALLOWED], ids=[r[0] for r in ALLOWED])
def test_allowed(wc: WebhookCluster, kind: str, ns_role: str, name: str, spec: dict[str, Any]) -> None:
    obj = wc.policy(name, **spec) if kind == POLICY else _obj(wc, kind, ns_role, name, spec)
    wc.client.create(kinds.kind_by_name(kind), obj, dry_run=True)


@pytest.mark.parametrize(("kind", "spec", "warning"), [
    ("SriovNetwork", {"resourceName": ""}, "Warning: spec.resourceName: is empty"),
    ("SriovIBNetwork", {"resourceName": "x", "ipam": '{"type": ""}'}, 'Warning: spec.ipam: has no non-empty'),
    ("OVSNetwork", {"resourceName": "x", "bridge": "br 0"}, "Warning: spec.bridge: is not a valid OVS bridge"),
    ("SriovIBNetwork", {"resourceName": "x", "capabilities": "infinibandGUID"},
     "Warning: spec.capabilities: is not valid JSON"),
    ("SriovNetwork", {"resourceName": "x", "logFile": 'a","type":"macvlan'}, "Warning: spec.logFile: contains a "
     "double quote"),
    ("OVSNetwork", {"resourceName": "x", "metaPlugins": "{"},
     "Warning: spec.metaPlugins: is not one or more comma-separated JSON objects"),
])
def test_kubectl_shows_the_warning_of_a_network_upstream_admits(wc: WebhookCluster, kubeconfig: Path,
                                                               tmp_path: Path, kind: str, spec: dict[str, Any],
                                                               warning: str) -> None:
    manifest = tmp_path / "net.json"
    manifest.write_text(json.dumps(_obj(wc, kind, "op", "warned", spec)))
    done = run_kubectl(kubeconfig, "create", "--dry-run=server", "-f", str(manifest), "-o", "name")
    assert done.stdout.strip().endswith("/warned"), done.stdout
    assert warning in done.stderr, done.stderr


def _condition(client: Any, kind: str, name: str, namespace: str, type_: str) -> dict[str, Any] | None:
    obj = client.get(kinds.kind_by_name(kind), name, namespace)
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def _gone(client: Any, kind: str, name: str, namespace: str) -> bool:
    try:
        client.get(kinds.kind_by_name(kind), name, namespace)
    except NotFound:
        return True
    return False


def test_ib_network_with_capabilities_that_are_not_json_is_admitted_with_a_warning_and_gets_no_nad(
        wc: WebhookCluster, kubeconfig: Path, tmp_path: Path) -> None:
    """The webhook and the network controllers behind the real kube-apiserver (no node: no host involved).
    Upstream admits `capabilities: infinibandGUID` and then cannot render it: kubectl prints our warning,
    the object is stored, no NAD appears and Ready=False names spec.capabilities."""
    kind, name, ns = "SriovIBNetwork", "ib-guid", wc.operator_ns
    manifest = tmp_path / "ib.json"
    manifest.write_text(json.dumps(_obj(wc, kind, "op", name, {"resourceName": "mlx_ib",
                                                                "capabilities": "infinibandGUID"})))
    with network_controllers(kubeconfig, ns) as client:
        try:
            done = run_kubectl(kubeconfig, "apply", "-f", str(manifest))
            assert "Warning: spec.capabilities: is not valid JSON" in done.stderr, done.stderr
            assert f"sriovibnetwork.sriovnetwork.openshift.io/{name} created" in done.stdout, done.stdout
            cond = wait_for(lambda: _condition(client, kind, name, ns, "Ready"), timeout=120, what="Ready")
            assert (cond["status"], cond["reason"]) == ("False", "NetworkAttachmentDefinitionInvalid"), cond
            assert cond["message"].startswith("spec.capabilities: is not valid JSON"), cond["message"]
            warning = wait_for(lambda: _condition(client, kind, name, ns, "SpecWarning"), timeout=120,
                               what="SpecWarning")
            assert warning["message"].startswith("spec.capabilities: "), warning["message"]
            with pytest.raises(NotFound):
                client.get(kinds.NETWORK_ATTACHMENT_DEFINITION, name, ns)
        finally:
            client.delete(kinds.kind_by_name(kind), name, ns)
            wait_for(lambda: _gone(client, kind, name, ns), timeout=120, what="the network deleted")


def test_policy_outside_operator_namespace_is_stored_with_a_warning(wc: WebhookCluster) -> None:
    obj = wc.policy("stray")
    obj["metadata"]["namespace"] = wc.apps_ns
    stored = wc.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, obj, dry_run=True)
    assert stored["spec"]["priority"] == 99  # mutated too


def test_defaults_are_visible_on_the_stored_object(wc: WebhookCluster) -> None:
    ib = wc.policy("defaults-ib", resourceName="ibnics", linkType="IB", nicSelector={"pfNames": ["ens2f0#0-1"]})
    plain = wc.policy("defaults-plain", resourceName="plain", priority=10, nicSelector={"pfNames": ["ens1f1#0-1"]})
    try:
        wc.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, ib)
        wc.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, plain)
        got_ib = wc.client.get(kinds.SRIOV_NETWORK_NODE_POLICY, "defaults-ib", wc.operator_ns)["spec"]
        got_plain = wc.client.get(kinds.SRIOV_NETWORK_NODE_POLICY, "defaults-plain", wc.operator_ns)["spec"]
        assert (got_ib["priority"], got_ib["isRdma"], got_ib["deviceType"]) == (99, True, "netdevice")
        assert (got_plain["priority"], got_plain["isRdma"]) == (10, False)
        # The update path is judged too: the same PF range as a stored peer is refused.
        clash = wc.client.get(kinds.SRIOV_NETWORK_NODE_POLICY, "defaults-plain", wc.operator_ns)
        clash["spec"]["nicSelector"] = {"pfNames": ["ens2f0#1-1"]}
        with pytest.raises(ApiError) as info:
            wc.client.update(kinds.SRIOV_NETWORK_NODE_POLICY, clash)
        assert "overlapped with existing policy defaults-ib" in info.value.message
    finally:
        for name in ("defaults-ib", "defaults-plain"):
            try:
                wc.client.delete(kinds.SRIOV_NETWORK_NODE_POLICY, name, wc.operator_ns)
            except NotFound:
                pass


def test_disable_drain_refused_while_a_node_updates(wc: WebhookCluster) -> None:
    cfg = _obj(wc, "SriovOperatorConfig", "op", "default", {"disableDrain": False})
    wc.client.create(kinds.SRIOV_OPERATOR_CONFIG, cfg)
    state = wc.client.get(kinds.SRIOV_NETWORK_NODE_STATE, wc.node_names[0], wc.operator_ns)
    state["status"]["syncStatus"] = "InProgress"
    wc.client.update_status(kinds.SRIOV_NETWORK_NODE_STATE, state)
    try:
        current = wc.client.get(kinds.SRIOV_OPERATOR_CONFIG, "default", wc.operator_ns)
        current["spec"]["disableDrain"] = True
        with pytest.raises(ApiError) as info:
            wc.client.update(kinds.SRIOV_OPERATOR_CONFIG, current)
        assert f"can't set Spec.DisableDrain = true while node[{wc.node_names[0]}] is updating" in info.value.message
    finally:
        state = wc.client.get(kinds.SRIOV_NETWORK_NODE_STATE, wc.node_names[0], wc.operator_ns)
        state["status"]["syncStatus"] = "Succeeded"
        wc.client.update_status(kinds.SRIOV_NETWORK_NODE_STATE, state)
    current = wc.client.get(kinds.SRIOV_OPERATOR_CONFIG, "default", wc.operator_ns)
    current["spec"]["disableDrain"] = True
    assert wc.client.update(kinds.SRIOV_OPERATOR_CONFIG, current)["spec"]["disableDrain"] is True


def test_supported_nic_list_is_reloaded(wc: WebhookCluster) -> None:
    obj = wc.policy("newnic", resourceName="newnic", nicSelector={"vendor": "1234", "deviceID": "5678"})
    with pytest.raises(ApiError) as info:
        wc.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, obj, dry_run=True)
    assert "vendor 1234 is not supported" in info.value.message
    wc.client.patch(core.CONFIG_MAP, "supported-nic-ids", {"data": {"Acme_x1": "1234 5678 5679"}}, wc.operator_ns)
    deadline = time.monotonic() + 15
    while True:
        try:
            wc.client.create(kinds.SRIOV_NETWORK_NODE_POLICY, obj, dry_run=True)
            break
        except ApiError as exc:
            assert "vendor 1234 is not supported" in exc.message, exc.message
            assert time.monotonic() < deadline, "the webhook never picked up the new supported NIC"
            time.sleep(0.3)


def test_pod_gets_resources_and_podnetinfo(wc: WebhookCluster) -> None:
    wc.client.create(kinds.NETWORK_ATTACHMENT_DEFINITION, nad("sriov-net", wc.apps_ns))
    wc.client.create(kinds.NETWORK_ATTACHMENT_DEFINITION, nad("mlx-net", wc.apps_ns, "openshift.io/mlxnics"))
    pod = {"metadata": {"name": "app", "namespace": wc.apps_ns, "labels": {"app": "x"},
                        "annotations": {"k8s.v1.cni.cncf.io/networks": "sriov-net, sriov-net@net2, "
                                        f"{wc.apps_ns}/mlx-net"}},
           "spec": {"containers": [{"name": "main", "image": "busybox"}, {"name": "side", "image": "busybox"}]}}
    stored = wc.client.create(core.POD, pod)
    main, side = stored["spec"]["containers"]
    assert main["resources"]["requests"] == {"openshift.io/intelnics": "2", "openshift.io/mlxnics": "1"}
    assert main["resources"]["limits"] == {"openshift.io/intelnics": "2", "openshift.io/mlxnics": "1"}
    assert "resources" not in side or not side["resources"]
    volume = next(v for v in stored["spec"]["volumes"] if v["name"] == "podnetinfo")
    assert [i["path"] for i in volume["downwardAPI"]["items"]] == ["labels", "annotations"]
    for c in (main, side):
        assert {"name": "podnetinfo", "mountPath": "/etc/podnetinfo", "readOnly": True} in c["volumeMounts"]
    json_form = {"metadata": {"name": "app-json", "namespace": wc.apps_ns, "annotations": {
        "k8s.v1.cni.cncf.io/networks": '[{"name": "mlx-net", "interface": "net1"}]'}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    stored = wc.client.create(core.POD, json_form)
    assert stored["spec"]["containers"][0]["resources"]["limits"] == {"openshift.io/mlxnics": "1"}


def test_pod_with_missing_nad_is_denied(wc: WebhookCluster) -> None:
    pod = {"metadata": {"name": "lost", "namespace": wc.apps_ns,
                        "annotations": {"k8s.v1.cni.cncf.io/networks": "does-not-exist"}},
           "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    with pytest.raises(ApiError) as info:
        wc.client.create(core.POD, pod)
    assert f"network-attachment-definition {wc.apps_ns}/does-not-exist not found" in info.value.message
    plain = {"metadata": {"name": "plain", "namespace": wc.apps_ns},
             "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    stored = wc.client.create(core.POD, plain)["spec"]
    assert all(v["name"] != "podnetinfo" for v in stored.get("volumes", []))
    assert not stored["containers"][0].get("resources")
