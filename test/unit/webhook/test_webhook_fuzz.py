"""Property-based fuzzing: whatever arrives, the webhook answers 200/400/404, never raises, never 500,
and every 200 is an AdmissionReview that allows or denies with a message."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sriovop.webhook.handler import MUTATING_PATH, POD_MUTATING_PATH, VALIDATING_PATH, AdmissionHandler
from test.support.webhook_objects import SETTINGS, default_cluster, nad, policy
from test.support.webhook_server import Running, running_webhook

PATHS = [MUTATING_PATH, VALIDATING_PATH, POD_MUTATING_PATH]
KINDS = ["SriovNetworkNodePolicy", "SriovOperatorConfig", "SriovNetworkPoolConfig", "SriovNetwork",
         "SriovIBNetwork", "OVSNetwork", "Pod", "ConfigMap"]

json_leaf = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=20)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)

# Plausible field values, so that fuzzing reaches the deep rules and not only the type checks.
plausible = {
    "resourceName": st.sampled_from(["intelnics", "a_b", "-x", "", "a" * 70]) | st.text(max_size=8),
    "numVfs": st.integers(-3, 200) | json_value,
    "priority": st.integers(-1, 120),
    "mtu": st.integers(-1, 10000),
    "nodeSelector": st.sampled_from([{}, {"node-role.kubernetes.io/worker": ""}, {"zone": "x"}]) | json_value,
    "nicSelector": st.fixed_dictionaries({}, optional={
        "vendor": st.sampled_from(["8086", "15b3", "1234", ""]),
        "deviceID": st.sampled_from(["158a", "101d", "ffff", ""]),
        "pfNames": st.lists(st.sampled_from(["ens1f0", "ens1f0#0-3", "ens1f0#3-1", "enp59s0f0#2-9", "a#b#c",
                                             "ens2f0#x-1", "ens1f1#-1-2"]), max_size=3),
        "rootDevices": st.lists(st.sampled_from(["0000:3b:00.0", "0000:5e:00.0"]), max_size=2),
        "netFilter": st.sampled_from(["", "openstack/NetworkID:a", "aws/NetworkID:"]),
    }) | json_value,
    "deviceType": st.sampled_from(["netdevice", "vfio-pci", "x"]),
    "isRdma": st.booleans() | json_value,
    "linkType": st.sampled_from(["eth", "IB", "ib", "ETH", "x"]),
    "eSwitchMode": st.sampled_from(["legacy", "switchdev", ""]),
    "vdpaType": st.sampled_from(["virtio", "vhost", ""]),
    "externallyManaged": st.booleans(),
    "excludeTopology": st.booleans(),
    "bridge": st.sampled_from([{}, {"ovs": {}}, {"ovs": None}]) | json_value,
    "maxUnavailable": st.integers(-2, 5) | st.sampled_from(["10%", "0%", "x", "101%"]) | json_value,
    "ovsHardwareOffloadConfig": st.sampled_from([{}, {"name": "mcp"}]) | json_value,
    "disableDrain": st.booleans(),
    "networkNamespace": st.sampled_from(["", "apps"]),
    "ipam": st.sampled_from(["", "{}", '{"type": "static"}', "{", "[]"]) | st.text(max_size=10),
    "capabilities": st.sampled_from(["", '{"mac": true}', "1"]),
    "metaPlugins": st.sampled_from(["", '{"type": "tuning"}', "{}, {}", "]"]),
    "bridge_name": st.text(max_size=20),
}
spec_strategy = st.fixed_dictionaries({}, optional=plausible) | json_value
annotations = st.dictionaries(st.sampled_from(["k8s.v1.cni.cncf.io/networks", "x"]),
                              st.sampled_from(["sriov-a", "apps/sriov-a@n1, missing", '[{"name": "sriov-a"}]',
                                               "[", "a/b/c", ""]) | json_value, max_size=2)
obj_strategy = st.fixed_dictionaries({
    "metadata": st.fixed_dictionaries({}, optional={
        "name": st.sampled_from(["p1", "default", ""]) | json_value,
        "namespace": st.sampled_from(["sriov-network-operator", "apps"]) | json_value,
        "annotations": annotations,
    }) | json_value,
    "spec": spec_strategy,
}) | json_value

request_strategy = st.fixed_dictionaries({
    "uid": st.uuids().map(str) | json_value,
    "kind": st.fixed_dictionaries({"kind": st.sampled_from(KINDS) | json_value}) | json_value,
    "operation": st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]) | json_value,
}, optional={
    "name": st.sampled_from(["p1", ""]) | json_value,
    "namespace": st.sampled_from(["sriov-network-operator", "apps"]) | json_value,
    "object": obj_strategy,
    "oldObject": obj_strategy,
    "resource": json_value,
    "dryRun": json_value,
})
review_strategy = st.fixed_dictionaries({
    "apiVersion": st.sampled_from(["admission.k8s.io/v1"]) | json_value,
    "kind": st.sampled_from(["AdmissionReview"]) | json_value,
    "request": request_strategy | json_value,
}) | json_value


def _view() -> Any:
    view = default_cluster([policy("other", nicSelector={"pfNames": ["ens1f0#0-1"]})])
    view._nads[("apps", "sriov-a")] = nad("sriov-a", "apps")
    return view


HANDLER = AdmissionHandler(_view(), SETTINGS)


DENIAL = re.compile(r'^\w+ "[^"]*" is invalid: [\w.\[\]/-]+: \S')


def check_answer(status: int, body: Any) -> None:
    assert status in (200, 400, 404), (status, body)
    if status != 200:
        assert isinstance(body, dict) and body["error"]
        return
    response = body["response"]
    assert isinstance(response["allowed"], bool)
    assert isinstance(response["uid"], str) and response["uid"]
    if not response["allowed"]:
        message = response["status"]["message"]
        assert isinstance(message, str) and message
        assert "failed to judge" not in message, message  # a crash inside a rule is a bug
        assert DENIAL.match(message), message  # names the object, the field and the reason
    json.dumps(body)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), review=review_strategy)
def test_handler_judges_any_review(path: str, review: Any) -> None:
    try:
        body = json.dumps(review).encode()
    except (ValueError, TypeError):
        return
    check_answer(*HANDLER.handle(path, body))


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(PATHS), body=st.binary(max_size=300))
def test_handler_survives_random_bytes(path: str, body: bytes) -> None:
    status, answer = HANDLER.handle(path, body)
    assert status in (200, 400)
    check_answer(status, answer)


@pytest.fixture(scope="module")
def hook() -> Iterator[Running]:
    with running_webhook(_view(), SETTINGS) as running:
        yield running


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from([*PATHS, "/x"]), review=review_strategy, raw=st.binary(max_size=64),
       use_raw=st.booleans())
def test_http_endpoint_never_500(hook: Running, path: str, review: Any, raw: bytes, use_raw: bool) -> None:
    try:
        body = raw if use_raw else json.dumps(review).encode()
    except (ValueError, TypeError):
        body = raw
    status, answer = hook.post(path, body)
    if path == "/x":
        assert status == 404
        return
    check_answer(status, answer)
