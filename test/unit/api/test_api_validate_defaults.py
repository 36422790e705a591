"""The local structural validator and defaulter derived from the same types as the CRDs."""

from __future__ import annotations

from typing import Any

import pytest

from sriovop.api.v1 import kinds
from sriovop.api.v1.schema.defaults import apply_defaults
from sriovop.api.v1.schema.validate import validate_object
from test.support.api_samples import BAD_CASES, BadCase, load_samples

SAMPLES = load_samples()


def test_there_is_a_sample_of_every_kind() -> None:
    assert {obj["kind"] for _f, obj in SAMPLES} >= {k.kind for k in kinds.SRIOV_KINDS}


@pytest.mark.parametrize(("file", "obj"), SAMPLES, ids=[f"{f}:{o['metadata']['name']}" for f, o in SAMPLES])
def test_samples_are_valid_and_use_no_unknown_field(file: str, obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == kinds.API_VERSION
    errors = validate_object(obj["kind"], obj, unknown_fields=True)
    assert errors == [], f"{file}: {[str(e) for e in errors]}"


@pytest.mark.parametrize("case", BAD_CASES, ids=[c.id for c in BAD_CASES])
def test_each_bad_case_breaks_exactly_its_rule(case: BadCase) -> None:
    errors = validate_object(case.kind, case.build())
    assert [e.path for e in errors] == [case.field], [str(e) for e in errors]


def test_unknown_fields_are_reported_only_on_request() -> None:
    obj = {"spec": {"resourceName": "r", "vlanId": 3}}
    assert validate_object(kinds.SRIOV_NETWORK, obj) == []
    (err,) = validate_object(kinds.SRIOV_NETWORK, obj, unknown_fields=True)
    assert (err.path, err.reason) == ("spec.vlanId", "Unknown")


def test_error_messages_name_the_value_and_the_rule() -> None:
    (err,) = validate_object(kinds.SRIOV_NETWORK, {"spec": {"resourceName": "r", "vlan": 5000}})
    assert str(err) == "spec.vlan: 5000 should be less than or equal to 4094"
    (err,) = validate_object(kinds.SRIOV_NETWORK_NODE_POLICY, {"spec": {
        "resourceName": "r", "nodeSelector": {}, "numVfs": 1, "nicSelector": {}, "deviceType": "uio"}})
    assert err.reason == "Unsupported" and '"netdevice", "vfio-pci"' in err.message


def test_duplicate_condition_types_are_rejected() -> None:
    cond = {"type": "Ready", "status": "True", "reason": "R", "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z"}
    errors = validate_object(kinds.SRIOV_NETWORK, {"spec": {"resourceName": "r"},
                                                   "status": {"conditions": [cond, dict(cond)]}})
    assert [(e.path, e.reason) for e in errors] == [("status.conditions[1]", "Duplicate")]


def test_int_or_string_accepts_both_and_rejects_others() -> None:
    for ok in (1, "25%", "garbage"):  # the schema only types it; the webhook parses the string
        assert validate_object(kinds.SRIOV_NETWORK_POOL_CONFIG, {"spec": {"maxUnavailable": ok}}) == []
    for bad in (True, 1.5, [1], {"a": 1}):
        (err,) = validate_object(kinds.SRIOV_NETWORK_POOL_CONFIG, {"spec": {"maxUnavailable": bad}})
        assert err.path == "spec.maxUnavailable"


def test_defaults_fill_absent_fields_only() -> None:
    policy: dict[str, Any] = {"spec": {"numVfs": 1}}
    apply_defaults(kinds.SRIOV_NETWORK_NODE_POLICY, policy)
    assert policy["spec"]["deviceType"] == "netdevice"
    vfio: dict[str, Any] = {"spec": {"deviceType": "vfio-pci"}}
    assert apply_defaults("SriovNetworkNodePolicy", vfio)["spec"]["deviceType"] == "vfio-pci"
    net: dict[str, Any] = {"spec": {"resourceName": "r"}}
    assert apply_defaults(kinds.SRIOV_NETWORK, net)["spec"]["logLevel"] == "info"
    explicit_empty: dict[str, Any] = {"spec": {"logLevel": ""}}
    assert apply_defaults(kinds.SRIOV_NETWORK, explicit_empty)["spec"]["logLevel"] == ""


def test_defaults_do_not_create_absent_parents_and_leave_kinds_without_defaults_alone() -> None:
    no_spec: dict[str, Any] = {"metadata": {"name": "x"}}
    assert apply_defaults(kinds.SRIOV_NETWORK_NODE_POLICY, no_spec) == {"metadata": {"name": "x"}}
    state: dict[str, Any] = {"spec": {"interfaces": [{"pciAddress": "0000:00:01.0"}]}}
    assert apply_defaults(kinds.SRIOV_NETWORK_NODE_STATE, state) == {
        "spec": {"interfaces": [{"pciAddress": "0000:00:01.0"}]}}


def test_defaults_are_not_shared_between_objects() -> None:
    a = apply_defaults(kinds.SRIOV_NETWORK, {"spec": {}})
    b = apply_defaults(kinds.SRIOV_NETWORK, {"spec": {}})
    a["spec"]["logLevel"] = "debug"
    assert b["spec"]["logLevel"] == "info"


def test_null_properties_and_map_values_count_as_absent_like_the_server_prunes_them() -> None:
    assert validate_object(kinds.SRIOV_NETWORK, {"spec": {"resourceName": "r", "vlan": None}}) == []
    (err,) = validate_object(kinds.SRIOV_NETWORK, {"spec": {"resourceName": None}})
    assert (err.path, err.reason) == ("spec.resourceName", "Required")
    assert validate_object(kinds.SRIOV_OPERATOR_CONFIG, {"spec": {"featureGates": {"x": None}}}) == []
    (err,) = validate_object(kinds.SRIOV_OPERATOR_CONFIG, {"spec": {"disablePlugins": [None]}})
    assert err.path == "spec.disablePlugins[0]"  # array items are not pruned


def _schema_paths(schema: dict[str, Any], path: str) -> set[str]:
    out: set[str] = set()
    for name, sub in schema.get("properties", {}).items():
        p = f"{path}.{name}"
        out.add(p)
        out |= _schema_paths(sub, p)
        if "items" in sub:
            out |= _schema_paths(sub["items"], p + "[]")
    return out


def _value_paths(value: Any, path: str) -> set[str]:
    out: set[str] = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            p = f"{path}.{key}"
            out.add(p)
            out |= _value_paths(sub, p)
    elif isinstance(value, list):
        for sub in value:
            out |= _value_paths(sub, path + "[]")
    return out


@pytest.mark.parametrize("kind", [k.kind for k in kinds.SRIOV_KINDS])
def test_samples_cover_every_spec_field(kind: str) -> None:
    from sriovop.api.v1.registry import openapi_schema

    wanted = _schema_paths(openapi_schema(kind)["properties"]["spec"], "spec")
    have: set[str] = set()
    for _f, obj in SAMPLES:
        if obj["kind"] == kind:
            have |= _value_paths(obj["spec"], "spec")
    assert sorted(wanted - have) == []


def test_node_state_sample_covers_every_status_field() -> None:
    from sriovop.api.v1.registry import openapi_schema

    (state,) = [o for _f, o in SAMPLES if o["kind"] == "SriovNetworkNodeState"]
    wanted = _schema_paths(openapi_schema(kinds.SRIOV_NETWORK_NODE_STATE)["properties"]["status"], "status")
    assert sorted(wanted - _value_paths(state["status"], "status")) == []
