"""The network controllers against the real API server: NADs follow the network CRs."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION as NAD
from sriovop.api.v1.kinds import OVS_NETWORK, SRIOV_IB_NETWORK, SRIOV_NETWORK
from sriovop.runtime.client import Client
from sriovop.runtime.errors import NotFound
from sriovop.runtime.kinds import EVENT, NAMESPACE, Kind
from test.support.controllers_harness import network_controllers
from test.support.kube import create_namespace, delete_namespace
from test.support.kubectl import run_kubectl
from test.support.poll import wait_for


@pytest.fixture
def api(kubeconfig: Path, namespace: str) -> Iterator[Client]:
    """The controllers running with `namespace` as the operator namespace; yields a plain client."""
    with network_controllers(kubeconfig, namespace) as client:
        yield client


@pytest.fixture
def other_namespace(kubeconfig: Path) -> Iterator[str]:
    name = f"tenant-{uuid.uuid4().hex[:8]}"
    create_namespace(kubeconfig, name)
    yield name
    delete_namespace(kubeconfig, name)


def create_network(client: Client, kind: Kind, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return client.create(kind, {"metadata": {"name": name, "namespace": namespace},
                                "spec": {"resourceName": "intel_vfs", **spec}})


def ready(client: Client, kind: Kind, namespace: str, name: str) -> dict[str, Any] | None:
    obj = client.get(kind, name, namespace)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == "Ready":
            return cond  # type: ignore[no-any-return]
    return None


def nad_config(client: Client, namespace: str, name: str) -> dict[str, Any]:
    return json.loads(client.get(NAD, name, namespace)["spec"]["config"])  # type: ignore[no-any-return]


def gone(client: Client, kind: Kind, name: str, namespace: str) -> bool:
    try:
        client.get(kind, name, namespace)
    except NotFound:
        return True
    return False


def test_create_renders_nad_with_finalizer_owner_and_ready(api: Client, namespace: str) -> None:
    create_network(api, SRIOV_NETWORK, namespace, "net1", vlan=10, ipam='{ "type": "host-local" }')
    nad = wait_for(lambda: api.get(NAD, "net1", namespace), what="the NAD")
    assert nad["metadata"]["annotations"] == {
        consts.NAD_RESOURCE_NAME_ANNOTATION: "openshift.io/intel_vfs",
        consts.OWNER_REF_ANNOTATION: f"SriovNetwork.sriovnetwork.openshift.io/{namespace}/net1",
    }
    cr = api.get(SRIOV_NETWORK, "net1", namespace)
    assert nad["metadata"]["ownerReferences"] == [{
        "apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork", "name": "net1",
        "uid": cr["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    # the CRD default logLevel "info" is rendered; config is 4-space indented JSON in template order
    assert nad["spec"]["config"].startswith('{\n    "cniVersion": "1.0.0",\n    "name": "net1",\n    "type": "sriov"')
    assert list(json.loads(nad["spec"]["config"])) == ["cniVersion", "name", "type", "vlan", "vlanQoS", "logLevel",
                                                        "ipam"]
    cond = wait_for(lambda: ready(api, SRIOV_NETWORK, namespace, "net1"), what="Ready condition")
    assert (cond["status"], cond["reason"]) == ("True", "NetworkReady")
    cr = api.get(SRIOV_NETWORK, "net1", namespace)
    assert consts.NETATTDEF_FINALIZER in cr["metadata"]["finalizers"]
    assert cr["metadata"]["annotations"][consts.LAST_NETWORK_NAMESPACE_ANNOTATION] == namespace
    events = wait_for(lambda: [e for e in api.list(EVENT, namespace)
                               if e["involvedObject"]["name"] == "net1" and e["reason"] == "NetworkReady"],
                      what="a NetworkReady event")
    assert events[0]["type"] == "Normal"


def test_update_changes_nad(api: Client, namespace: str) -> None:
    create_network(api, SRIOV_NETWORK, namespace, "net2", vlan=10)
    wait_for(lambda: nad_config(api, namespace, "net2")["vlan"] == 10, what="vlan 10")
    # A merge patch, as `kubectl patch` sends: the controller's status writes bump the resourceVersion
    # at any moment, so a read-modify-update here could lose the race with a 409.
    api.patch(SRIOV_NETWORK, "net2", {"spec": {"vlan": 20, "spoofChk": "on", "resourceName": "other"}}, namespace)
    config = wait_for(lambda: (c := nad_config(api, namespace, "net2"))["vlan"] == 20 and c, what="vlan 20")
    assert config["spoofchk"] == "on"
    nad = api.get(NAD, "net2", namespace)
    assert nad["metadata"]["annotations"][consts.NAD_RESOURCE_NAME_ANNOTATION] == "openshift.io/other"


def test_hand_edited_or_deleted_nad_is_restored(api: Client, namespace: str) -> None:
    create_network(api, SRIOV_NETWORK, namespace, "net3")
    nad = wait_for(lambda: api.get(NAD, "net3", namespace), what="the NAD")
    rendered = nad["spec"]["config"]
    nad["spec"]["config"] = '{"cniVersion":"1.0.0","name":"net3","type":"macvlan"}'
    api.update(NAD, nad)
    wait_for(lambda: api.get(NAD, "net3", namespace)["spec"]["config"] == rendered, what="config restored")
    uid = api.get(NAD, "net3", namespace)["metadata"]["uid"]
    api.delete(NAD, "net3", namespace)
    wait_for(lambda: api.get(NAD, "net3", namespace)["metadata"]["uid"] != uid, what="deleted NAD recreated")


def test_move_namespace_and_delete_with_finalizer(api: Client, namespace: str, other_namespace: str) -> None:
    create_network(api, SRIOV_NETWORK, namespace, "mover")
    wait_for(lambda: api.get(NAD, "mover", namespace), what="NAD in the operator namespace")
    api.patch(SRIOV_NETWORK, "mover", {"spec": {"networkNamespace": other_namespace}}, namespace)
    moved = wait_for(lambda: api.get(NAD, "mover", other_namespace), what="NAD in the new namespace")
    assert "ownerReferences" not in moved["metadata"]  # cross-namespace: the finalizer cleans up instead
    wait_for(lambda: gone(api, NAD, "mover", namespace), what="old NAD deleted")
    wait_for(lambda: api.get(SRIOV_NETWORK, "mover", namespace)["metadata"]["annotations"]
             .get(consts.LAST_NETWORK_NAMESPACE_ANNOTATION) == other_namespace, what="annotation follows")
    api.delete(SRIOV_NETWORK, "mover", namespace)
    wait_for(lambda: gone(api, NAD, "mover", other_namespace), what="NAD deleted with the network")
    wait_for(lambda: gone(api, SRIOV_NETWORK, "mover", namespace), what="finalizer removed, CR gone")


def test_nad_owned_by_someone_else_is_left_alone(api: Client, namespace: str, other_namespace: str) -> None:
    foreign = {"metadata": {"name": "taken", "namespace": other_namespace, "annotations": {
        consts.OWNER_REF_ANNOTATION: f"SriovNetwork.sriovnetwork.openshift.io/{other_namespace}/someone"}},
        "spec": {"config": '{"cniVersion":"1.0.0","name":"taken","type":"macvlan"}'}}
    api.create(NAD, foreign, other_namespace)
    create_network(api, SRIOV_NETWORK, namespace, "taken", networkNamespace=other_namespace)
    cond = wait_for(lambda: ready(api, SRIOV_NETWORK, namespace, "taken"), what="Ready condition")
    assert (cond["status"], cond["reason"]) == ("False", "NetworkAttachmentDefinitionInvalid")
    assert "already exists and is owned by" in cond["message"]
    nad = api.get(NAD, "taken", other_namespace)
    assert json.loads(nad["spec"]["config"])["type"] == "macvlan"
    # deleting the network must not delete the NAD it never owned
    api.delete(SRIOV_NETWORK, "taken", namespace)
    wait_for(lambda: gone(api, SRIOV_NETWORK, "taken", namespace), what="CR gone")
    assert api.get(NAD, "taken", other_namespace)["metadata"]["annotations"][consts.OWNER_REF_ANNOTATION] \
        .endswith("/someone")


def test_namespace_created_later(api: Client, kubeconfig: Path, namespace: str) -> None:
    later = f"later-{uuid.uuid4().hex[:8]}"
    create_network(api, SRIOV_NETWORK, namespace, "waiting", networkNamespace=later)
    cond = wait_for(lambda: ready(api, SRIOV_NETWORK, namespace, "waiting"), what="Ready condition")
    assert (cond["status"], cond["reason"]) == ("False", "NamespaceNotFound")
    # let the reconcile triggered by that status write finish, so only the Namespace event is left to act
    time.sleep(1.0)
    assert gone(api, NAD, "waiting", later)
    create_namespace(kubeconfig, later)
    try:
        wait_for(lambda: api.get(NAD, "waiting", later), timeout=15, what="NAD once the namespace exists")
        cond = wait_for(lambda: (c := ready(api, SRIOV_NETWORK, namespace, "waiting")) and c["status"] == "True"
                        and c, what="Ready=True")
        assert cond["reason"] == "NetworkReady"
        warnings = [e for e in api.list(EVENT, namespace)
                    if e["involvedObject"]["name"] == "waiting" and e["reason"] == "NamespaceNotFound"]
        assert warnings and warnings[0]["type"] == "Warning"
    finally:
        delete_namespace(kubeconfig, later)
    assert api.get(NAMESPACE, later)


@pytest.mark.parametrize(("kind", "cni_type"), [(SRIOV_IB_NETWORK, "ib-sriov"), (OVS_NETWORK, "ovs")])
def test_ib_and_ovs_networks(api: Client, namespace: str, kind: Kind, cni_type: str) -> None:
    extra = {"bridge": "br0", "vlan": 5} if kind == OVS_NETWORK else {"linkState": "enable"}
    create_network(api, kind, namespace, "n", **extra)
    config = wait_for(lambda: nad_config(api, namespace, "n"), what="NAD")
    assert config["type"] == cni_type
    nad = api.get(NAD, "n", namespace)
    assert nad["metadata"]["annotations"][consts.OWNER_REF_ANNOTATION] == \
        f"{kind.kind}.sriovnetwork.openshift.io/{namespace}/n"
    cond = wait_for(lambda: ready(api, kind, namespace, "n"), what="Ready")
    assert cond["status"] == "True"


def test_network_outside_operator_namespace(api: Client, namespace: str, other_namespace: str) -> None:
    create_network(api, SRIOV_NETWORK, other_namespace, "local")
    nad = wait_for(lambda: api.get(NAD, "local", other_namespace), what="NAD next to the network")
    assert nad["metadata"]["ownerReferences"][0]["name"] == "local"
    cr = api.get(SRIOV_NETWORK, "local", other_namespace)
    assert consts.NETATTDEF_FINALIZER not in (cr["metadata"].get("finalizers") or [])
    create_network(api, SRIOV_NETWORK, other_namespace, "elsewhere", networkNamespace=namespace)
    cond = wait_for(lambda: ready(api, SRIOV_NETWORK, other_namespace, "elsewhere"), what="Ready condition")
    assert (cond["status"], cond["reason"]) == ("False", "NetworkAttachmentDefinitionInvalid")
    assert gone(api, NAD, "elsewhere", namespace)
    # no finalizer here and no garbage collector in this test cluster: the NAD still goes with its network
    api.delete(SRIOV_NETWORK, "local", other_namespace)
    wait_for(lambda: gone(api, NAD, "local", other_namespace), what="NAD of the deleted network removed")


def condition(client: Client, kind: Kind, namespace: str, name: str, type_: str) -> dict[str, Any] | None:
    obj = client.get(kind, name, namespace)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return cond  # type: ignore[no-any-return]
    return None


@pytest.mark.parametrize(("kind", "spec", "fragment"), [
    (SRIOV_NETWORK, {"resourceName": ""}, "spec.resourceName: is empty"),
    (SRIOV_NETWORK, {"capabilities": '{"mac": "yes"}'}, "spec.capabilities: should be a JSON object"),
    (SRIOV_IB_NETWORK, {"capabilities": '{"infinibandGUID": "yes"}'}, "spec.capabilities: should be a JSON object"),
    (OVS_NETWORK, {"capabilities": "[1]"}, "spec.capabilities: should be a JSON object"),
    (SRIOV_NETWORK, {"ipam": '{"subnet": "10.0.0.0/24"}'}, 'spec.ipam: has no non-empty string "type"'),
    (SRIOV_NETWORK, {"metaPlugins": '{"sysctl": {}}'}, 'spec.metaPlugins: element 0 has no non-empty string'),
    (OVS_NETWORK, {"bridge": "a-very-long-bridge-name"}, "spec.bridge: is not a valid OVS bridge name"),
])
def test_spec_upstream_renders_is_ready_with_a_spec_warning(
        api: Client, namespace: str, kind: Kind, spec: dict[str, Any], fragment: str) -> None:
    """What upstream renders is rendered and Ready=True as upstream says; our concern is a separate
    SpecWarning condition naming the field, removed once the spec is fixed (Ready stays True)."""
    create_network(api, kind, namespace, "odd", **spec)
    nad = wait_for(lambda: api.get(NAD, "odd", namespace), what="the NAD")
    if "capabilities" in spec:
        assert nad_config(api, namespace, "odd")["capabilities"] == json.loads(spec["capabilities"])
    elif "resourceName" in spec:
        assert nad["metadata"]["annotations"][consts.NAD_RESOURCE_NAME_ANNOTATION] == "openshift.io/"
    warning = wait_for(lambda: condition(api, kind, namespace, "odd", "SpecWarning"), what="SpecWarning")
    assert (warning["status"], warning["reason"]) == ("True", "NetworkSpecInvalid")
    assert fragment in warning["message"], warning["message"]
    cond = ready(api, kind, namespace, "odd")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "NetworkReady"), cond
    api.patch(kind, "odd", {"spec": {"resourceName": "fixed", "capabilities": '{"mac": true}', "ipam": "{}",
                                     "metaPlugins": None, "bridge": None}}, namespace)
    wait_for(lambda: condition(api, kind, namespace, "odd", "SpecWarning") is None,
             what="SpecWarning removed after the fix")
    cond = ready(api, kind, namespace, "odd")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "NetworkReady"), cond
    assert nad_config(api, namespace, "odd")["capabilities"] == {"mac": True}


def test_kubectl_wait_ready_on_a_warned_network_succeeds(api: Client, kubeconfig: Path, namespace: str) -> None:
    """`kubectl wait --for condition=Ready` returns as on upstream for a network it admits and renders;
    `--for condition=SpecWarning` finds our concern."""
    create_network(api, SRIOV_NETWORK, namespace, "warned", resourceName="")
    done = run_kubectl(kubeconfig, "wait", "--for", "condition=Ready", "--timeout=120s", "-n", namespace,
                       "sriovnetwork/warned", check=False)
    assert done.returncode == 0, done.stderr
    assert "condition met" in done.stdout
    done = run_kubectl(kubeconfig, "wait", "--for", "condition=SpecWarning", "--timeout=120s", "-n", namespace,
                       "sriovnetwork/warned", check=False)
    assert done.returncode == 0, done.stderr
    # a network Ready=False (its namespace does not exist) still makes kubectl wait time out, as upstream
    create_network(api, SRIOV_NETWORK, namespace, "nowhere", networkNamespace=f"missing-{uuid.uuid4().hex[:6]}")
    wait_for(lambda: (c := ready(api, SRIOV_NETWORK, namespace, "nowhere")) and c["status"] == "False",
             what="Ready=False NamespaceNotFound")
    done = run_kubectl(kubeconfig, "wait", "--for", "condition=Ready", "--timeout=3s", "-n", namespace,
                       "sriovnetwork/nowhere", check=False)
    assert done.returncode != 0


@pytest.mark.parametrize(("kind", "spec", "field"), [
    (SRIOV_IB_NETWORK, {"capabilities": "infinibandGUID"}, "spec.capabilities"),
    (SRIOV_NETWORK, {"ipam": "{'type': 'dhcp'}"}, "spec.ipam"),
    (OVS_NETWORK, {"metaPlugins": '{"type": "tuning"'}, "spec.metaPlugins"),
    # Upstream renders this one, with a `type` key the user never wrote as such.
    (SRIOV_NETWORK, {"logFile": '/tmp/a","type":"macvlan'}, "spec.logFile"),
    (OVS_NETWORK, {"bridge": 'br"0'}, "spec.bridge"),
])
def test_unrenderable_spec_gets_no_nad_and_ready_false_naming_the_field(
        api: Client, namespace: str, kind: Kind, spec: dict[str, Any], field: str) -> None:
    """Simulated host (no node involved): the CRD schema admits these strings, as upstream's does. No NAD
    is rendered; Ready=False NetworkAttachmentDefinitionInvalid and SpecWarning both name the field."""
    create_network(api, kind, namespace, "broken", **spec)
    cond = wait_for(lambda: ready(api, kind, namespace, "broken"), timeout=120, what="Ready condition")
    assert (cond["status"], cond["reason"]) == ("False", "NetworkAttachmentDefinitionInvalid"), cond
    assert cond["message"].startswith(f"{field}: "), cond["message"]
    assert "the NetworkAttachmentDefinition is not rendered" in cond["message"]
    warning = wait_for(lambda: condition(api, kind, namespace, "broken", "SpecWarning"), timeout=120,
                       what="SpecWarning")
    assert (warning["status"], warning["reason"]) == ("True", "NetworkSpecInvalid")
    assert warning["message"].startswith(f"{field}: "), warning["message"]
    assert gone(api, NAD, "broken", namespace)
    events = wait_for(lambda: [e for e in api.list(EVENT, namespace) if e["involvedObject"]["name"] == "broken"
                               and e["reason"] == "NetworkAttachmentDefinitionInvalid"], timeout=120,
                      what="a NetworkAttachmentDefinitionInvalid event")
    assert events[0]["type"] == "Warning"


def test_nad_from_an_earlier_spec_is_left_while_the_spec_cannot_render(api: Client, namespace: str,
                                                                       other_namespace: str) -> None:
    """Simulated host: as upstream (whose reconcile errors out before touching any NAD), the NAD rendered
    from the last sound spec stays as it is, a pending move included; Ready=False says why. Fixing the
    spec renders again."""
    create_network(api, SRIOV_IB_NETWORK, namespace, "ib", capabilities='{"infinibandGUID": true}')
    wait_for(lambda: (c := ready(api, SRIOV_IB_NETWORK, namespace, "ib")) and c["status"] == "True",
             timeout=120, what="Ready=True")
    before = api.get(NAD, "ib", namespace)
    api.patch(SRIOV_IB_NETWORK, "ib", {"spec": {"capabilities": "infinibandGUID",
                                                "networkNamespace": other_namespace}}, namespace)
    cond = wait_for(lambda: (c := ready(api, SRIOV_IB_NETWORK, namespace, "ib")) and c["status"] == "False" and c,
                    timeout=120, what="Ready=False")
    assert cond["reason"] == "NetworkAttachmentDefinitionInvalid"
    assert cond["message"].startswith("spec.capabilities: is not valid JSON"), cond["message"]
    after = api.get(NAD, "ib", namespace)
    assert (after["metadata"]["resourceVersion"], after["spec"]) == (before["metadata"]["resourceVersion"],
                                                                     before["spec"])
    assert json.loads(after["spec"]["config"])["capabilities"] == {"infinibandGUID": True}
    assert gone(api, NAD, "ib", other_namespace)
    api.patch(SRIOV_IB_NETWORK, "ib", {"spec": {"capabilities": '{"infinibandGUID": false}'}}, namespace)
    moved = wait_for(lambda: nad_config(api, other_namespace, "ib"), timeout=120, what="NAD rendered again")
    assert moved["capabilities"] == {"infinibandGUID": False}
    wait_for(lambda: gone(api, NAD, "ib", namespace), timeout=120, what="the old NAD removed by the move")
    wait_for(lambda: (c := ready(api, SRIOV_IB_NETWORK, namespace, "ib")) and c["status"] == "True",
             timeout=120, what="Ready=True again")
    wait_for(lambda: condition(api, SRIOV_IB_NETWORK, namespace, "ib", "SpecWarning") is None, timeout=120,
             what="SpecWarning removed")
