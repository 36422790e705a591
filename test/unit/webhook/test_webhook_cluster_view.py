"""The live ClusterView over a plain fake reader: selectors, NotFound, supported-NIC reloads."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sriovop.api.v1 import kinds
from sriovop.runtime import kinds as core
from sriovop.runtime.errors import NotFound, ServerError
from sriovop.webhook.cluster_view import ClientClusterView, SupportedNicSource, configmap_fetcher
from test.support.webhook_objects import SUPPORTED_NIC_DATA, nad, node, policy


class FakeReader:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, Any]] = []
        self.fail_gets = False

    def put(self, kind: Any, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.objects[(kind.kind, meta.get("namespace", ""), meta["name"])] = obj

    def get(self, kind: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", (kind.kind, name)))
        if self.fail_gets:
            raise ServerError(500, "boom")
        try:
            return self.objects[(kind.kind, namespace or "", name)]
        except KeyError:
            raise NotFound(404, f"{name} not found") from None

    def list(self, kind: Any, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict[str, Any]]:
        self.calls.append(("list", (kind.kind, namespace, label_selector)))
        return [o for (k, ns, _), o in self.objects.items()
                if k == kind.kind and (namespace is None or ns == namespace)]


@pytest.fixture
def reader() -> FakeReader:
    r = FakeReader()
    r.put(core.CONFIG_MAP, {"metadata": {"name": "supported-nic-ids", "namespace": "op"},
                            "data": dict(SUPPORTED_NIC_DATA)})
    r.put(core.NODE, node("a", {"zone": "1"}))
    r.put(core.NODE, node("b", {"zone": "2"}))
    r.put(kinds.SRIOV_NETWORK_NODE_POLICY, policy("p", "op"))
    r.put(kinds.SRIOV_NETWORK_NODE_POLICY, policy("q", "elsewhere"))
    r.put(kinds.NETWORK_ATTACHMENT_DEFINITION, nad("n", "apps"))
    return r


def test_reads_are_scoped_and_filtered(reader: FakeReader) -> None:
    view = ClientClusterView(reader, "op")
    assert [n["metadata"]["name"] for n in view.nodes({"zone": "2"})] == ["b"]
    assert ("list", ("Node", None, "zone=2")) in reader.calls
    assert [n["metadata"]["name"] for n in view.nodes({"zone": "has space"})] == []
    assert ("list", ("Node", None, None)) in reader.calls  # unsendable selector: list all, filter here
    assert [p["metadata"]["name"] for p in view.policies()] == ["p"]
    assert view.network_attachment_definition("apps", "n") is not None
    assert view.network_attachment_definition("apps", "missing") is None
    assert view.supported_nics().is_supported_model("8086", "158a")


def test_supported_nics_reload_keeps_last_good_table(reader: FakeReader) -> None:
    source = SupportedNicSource(configmap_fetcher(reader, "op"), ttl=0.01)
    cm = reader.objects[("ConfigMap", "op", "supported-nic-ids")]
    cm["data"] = {"Acme": "1234 5678 5679", "broken": "zz"}
    time.sleep(0.02)
    table = source.current()
    assert table.is_supported_model("1234", "5678") and len(table) == 1  # the bad entry is skipped
    reader.fail_gets = True
    time.sleep(0.02)
    assert source.current() is table


def test_first_load_must_succeed(reader: FakeReader) -> None:
    with pytest.raises(ValueError, match="op2/supported-nic-ids does not exist"):
        SupportedNicSource(configmap_fetcher(reader, "op2"))
    reader.objects[("ConfigMap", "op", "supported-nic-ids")]["data"] = {"bad": "1 2"}
    with pytest.raises(ValueError, match="'bad'"):
        SupportedNicSource(configmap_fetcher(reader, "op"))
