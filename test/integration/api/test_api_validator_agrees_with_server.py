"""Property test: for generated objects, our local validator and kube-apiserver accept/reject the same ones."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes import client
from kubernetes.client.rest import ApiException

from sriovop.api.v1 import kinds
from sriovop.api.v1.schema.validate import validate_object
from test.support.api_fuzz import objects
from test.support.kube import api_client, create_namespace, delete_namespace

KINDS = [k.kind for k in kinds.SRIOV_KINDS]


@pytest.fixture(scope="module")
def fuzz_ns(kubeconfig: Path) -> Iterator[tuple[client.ApiClient, str]]:
    name = f"api-fuzz-{uuid.uuid4().hex[:6]}"
    create_namespace(kubeconfig, name)
    with api_client(kubeconfig) as api:
        yield api, name
    delete_namespace(kubeconfig, name)


def _server_errors(api: client.ApiClient, ns: str, obj: dict[str, Any]) -> set[str] | None:
    """None if the server accepts the object (dry run), else the fields it names."""
    k = kinds.kind_by_name(obj["kind"])
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            k.group, k.version, ns, k.plural, obj, dry_run="All")
    except ApiException as exc:
        assert exc.status == 422, exc.body
        status = json.loads(exc.body)
        return {c.get("field", "") for c in status["details"]["causes"]}
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_local_validator_agrees_with_the_api_server(fuzz_ns: tuple[client.ApiClient, str], data: st.DataObject) -> None:
    api, ns = fuzz_ns
    kind = data.draw(st.sampled_from(KINDS))
    obj = data.draw(objects(kind))
    local = {e.path for e in validate_object(kind, obj)}
    server = _server_errors(api, ns, obj)
    event("accepted" if server is None else "rejected")
    assert (server is None) == (not local), f"server={server} local={local} obj={obj}"
    if server is not None:
        assert local <= server or server <= local, f"server={server} local={local} obj={obj}"


@pytest.mark.parametrize(("kind", "spec", "accepted"), [
    ("SriovNetwork", {"resourceName": "r", "vlan": 2.0}, True),
    ("SriovNetwork", {"resourceName": "r", "vlan": 1.5}, False),
    ("SriovNetworkPoolConfig", {"maxUnavailable": 2.0}, True),
    ("SriovNetworkPoolConfig", {"maxUnavailable": 0.5}, False),
    ("SriovNetworkPoolConfig", {"maxUnavailable": None}, True),
    ("SriovNetwork", {"resourceName": None}, False),
])
def test_number_and_null_edge_cases(fuzz_ns: tuple[client.ApiClient, str], kind: str, spec: dict[str, Any],
                                    accepted: bool) -> None:
    api, ns = fuzz_ns
    obj = {"apiVersion": kinds.API_VERSION, "kind": kind, "metadata": {"name": "edge"}, "spec": spec}
    assert (_server_errors(api, ns, obj) is None) is accepted
    assert (validate_object(kind, obj) == []) is accepted
