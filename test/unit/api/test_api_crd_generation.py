"""The committed CRDs are exactly what the Python types generate, and they carry upstream's contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from sriovop.api.v1 import kinds
from sriovop.api.v1.registry import SCHEMAS, openapi_schema
from sriovop.cli import main
from test.support.api_samples import CRD_DIR


def _crd_files() -> list[Path]:
    """The CRD files; the directory also holds its own kustomization.yaml (`kubectl apply -k manifests/crds`)."""
    return [p for p in CRD_DIR.glob("*.yaml") if p.name != "kustomization.yaml"]


def test_gen_crds_matches_committed_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["gen", "crds", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    generated = {p.name: p.read_text() for p in tmp_path.glob("*.yaml")}
    committed = {p.name: p.read_text() for p in _crd_files()}
    assert sorted(generated) == sorted(committed)
    stale = [name for name in generated if generated[name] != committed[name]]
    assert stale == [], f"run `sriovop gen crds` and commit: {stale}"


def test_gen_crds_check_flags_a_stale_file(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["gen", "crds", "--out", str(tmp_path)]).exit_code == 0
    assert runner.invoke(main, ["gen", "crds", "--check", "--out", str(tmp_path)]).exit_code == 0
    victim = tmp_path / "sriovnetwork.openshift.io_sriovnetworks.yaml"
    victim.write_text(victim.read_text().replace("maximum: 4094", "maximum: 4096"))
    result = runner.invoke(main, ["gen", "crds", "--check", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "sriovnetwork.openshift.io_sriovnetworks.yaml" in result.output


def _crd(file: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((CRD_DIR / file).read_text()) if d]
    assert len(docs) == 1
    return docs[0]


def test_one_file_per_kind_with_upstream_names() -> None:
    files = sorted(p.name for p in _crd_files())
    assert files == sorted([
        "sriovnetwork.openshift.io_sriovnetworknodepolicies.yaml",
        "sriovnetwork.openshift.io_sriovnetworks.yaml",
        "sriovnetwork.openshift.io_sriovibnetworks.yaml",
        "sriovnetwork.openshift.io_ovsnetworks.yaml",
        "sriovnetwork.openshift.io_sriovnetworknodestates.yaml",
        "sriovnetwork.openshift.io_sriovoperatorconfigs.yaml",
        "sriovnetwork.openshift.io_sriovnetworkpoolconfigs.yaml",
        "k8s.cni.cncf.io_network-attachment-definitions.yaml",
    ])
    for ks in SCHEMAS:
        crd = _crd(ks.file_name)
        assert crd["metadata"]["name"] == f"{ks.kind.plural}.{ks.kind.group}"
        assert crd["spec"]["names"]["kind"] == ks.kind.kind
        assert crd["spec"]["names"]["listKind"] == ks.kind.kind + "List"
        assert crd["spec"]["scope"] == "Namespaced"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1" and version["served"] and version["storage"]


def test_every_sriov_kind_has_a_status_subresource_and_the_nad_has_none() -> None:
    for ks in SCHEMAS:
        (version,) = _crd(ks.file_name)["spec"]["versions"]
        if ks.kind is kinds.NETWORK_ATTACHMENT_DEFINITION:
            assert "subresources" not in version
        else:
            assert version["subresources"] == {"status": {}}


def _columns(file: str) -> list[tuple[str, str]]:
    (version,) = _crd(file)["spec"]["versions"]
    return [(c["name"], c["jsonPath"]) for c in version.get("additionalPrinterColumns", [])]


def test_printer_columns_are_upstreams_plus_sriovops_policy_and_pool_status() -> None:
    ready = ("Ready", '.status.conditions[?(@.type=="Ready")].status')
    age = ("Age", ".metadata.creationTimestamp")
    for f in ("sriovnetworks", "sriovibnetworks", "ovsnetworks", "sriovoperatorconfigs"):
        assert _columns(f"sriovnetwork.openshift.io_{f}.yaml") == [ready, age]
    assert _columns("sriovnetwork.openshift.io_sriovnetworknodestates.yaml") == [
        ("Sync Status", ".status.syncStatus"),
        ("Desired Sync State", r".metadata.annotations.sriovnetwork\.openshift\.io/desired-state"),
        ("Current Sync State", r".metadata.annotations.sriovnetwork\.openshift\.io/current-state"),
        age,
    ]
    # Upstream has none on policies and pools; sriovop shows the status its operator writes there.
    assert _columns("sriovnetwork.openshift.io_sriovnetworknodepolicies.yaml") == [
        ("Matched", ".status.matchedNodes"), ("Ready Nodes", ".status.readyNodes"), ready,
        ("Degraded", '.status.conditions[?(@.type=="Degraded")].status'), age]
    assert _columns("sriovnetwork.openshift.io_sriovnetworkpoolconfigs.yaml") == [
        ("Nodes", ".status.nodeCount"), ("Draining", ".status.drainingNodes"), ready, age]


def _walk(schema: dict[str, Any], path: str = "") -> list[str]:
    """Every property path in a schema, `[]` for array items."""
    out = []
    for name, sub in schema.get("properties", {}).items():
        p = f"{path}.{name}" if path else name
        out.append(p)
        out.extend(_walk(sub, p))
        if "items" in sub:
            out.extend(_walk(sub["items"], p + "[]"))
    return out


def test_node_state_keeps_upstreams_odd_json_names() -> None:
    paths = set(_walk(openapi_schema(kinds.SRIOV_NETWORK_NODE_STATE)))
    for p in ("status.interfaces[].totalvfs", "status.interfaces[].Vfs", "status.interfaces[].Vfs[].Vlan",
              "status.interfaces[].altNames", "status.interfaces[].linkAdminState",
              "status.interfaces[].Vfs[].representorName", "status.interfaces[].Vfs[].guid",
              "spec.interfaces[].vfGroups[].vfRange", "spec.bridges.ovs[].uplinks[].pciAddress",
              "spec.system.rdmaMode", "status.syncStatus", "status.lastSyncError"):
        assert p in paths, p
    assert "status.interfaces[].totalVfs" not in paths and "status.interfaces[].vfs" not in paths
    iface = openapi_schema(kinds.SRIOV_NETWORK_NODE_STATE)["properties"]["status"]["properties"]["interfaces"]
    assert iface["items"]["required"] == ["pciAddress"]
    assert iface["items"]["properties"]["Vfs"]["items"]["required"] == ["pciAddress", "vfID"]


def _spec(kind: kinds.Kind) -> dict[str, Any]:
    spec: dict[str, Any] = openapi_schema(kind)["properties"]["spec"]
    return spec


def test_policy_schema_rules() -> None:
    spec = _spec(kinds.SRIOV_NETWORK_NODE_POLICY)
    props = spec["properties"]
    assert spec["required"] == ["nicSelector", "nodeSelector", "numVfs", "resourceName"]
    assert (props["priority"]["minimum"], props["priority"]["maximum"]) == (0, 99)
    assert props["mtu"]["minimum"] == 1 and "maximum" not in props["mtu"]
    assert props["numVfs"]["minimum"] == 0
    assert props["deviceType"]["enum"] == ["netdevice", "vfio-pci"]
    assert props["deviceType"]["default"] == "netdevice"
    assert props["linkType"]["enum"] == ["eth", "ETH", "ib", "IB"]
    assert props["eSwitchMode"]["enum"] == ["legacy", "switchdev"]
    assert props["vdpaType"]["enum"] == ["virtio", "vhost"]
    assert set(props["nicSelector"]["properties"]) == {"vendor", "deviceID", "rootDevices", "pfNames", "netFilter"}
    assert props["bridge"]["properties"]["ovs"]["properties"]["bridge"]["properties"]["failMode"]["enum"] == [
        "secure", "standalone"]


def test_network_schema_rules() -> None:
    props = _spec(kinds.SRIOV_NETWORK)["properties"]
    assert _spec(kinds.SRIOV_NETWORK)["required"] == ["resourceName"]
    assert (props["vlan"]["minimum"], props["vlan"]["maximum"]) == (0, 4094)
    assert (props["vlanQoS"]["minimum"], props["vlanQoS"]["maximum"]) == (0, 7)
    assert props["vlanProto"]["enum"] == ["802.1q", "802.1Q", "802.1ad", "802.1AD"]
    assert props["spoofChk"]["enum"] == ["on", "off"] and props["trust"]["enum"] == ["on", "off"]
    assert props["linkState"]["enum"] == ["auto", "enable", "disable"]
    assert props["logLevel"]["enum"] == ["panic", "error", "warning", "info", "debug", ""]
    assert props["logLevel"]["default"] == "info"
    assert props["minTxRate"]["minimum"] == 0 and props["maxTxRate"]["minimum"] == 0
    ovs = _spec(kinds.OVS_NETWORK)["properties"]
    assert (ovs["vlan"]["minimum"], ovs["vlan"]["maximum"]) == (0, 4095)
    for key in ("minID", "maxID", "id"):
        assert (ovs["trunk"]["items"]["properties"][key]["minimum"],
                ovs["trunk"]["items"]["properties"][key]["maximum"]) == (0, 4095)
    ib = _spec(kinds.SRIOV_IB_NETWORK)["properties"]
    assert set(ib) == {"networkNamespace", "resourceName", "capabilities", "ipam", "linkState", "metaPlugins"}


def test_status_conditions_are_a_list_map_keyed_by_type() -> None:
    for kind in (*kinds.NETWORK_KINDS, kinds.SRIOV_OPERATOR_CONFIG):
        cond = openapi_schema(kind)["properties"]["status"]["properties"]["conditions"]
        assert cond["x-kubernetes-list-type"] == "map"
        assert cond["x-kubernetes-list-map-keys"] == ["type"]
        assert cond["items"]["required"] == ["lastTransitionTime", "message", "reason", "status", "type"]


def test_pool_and_operator_config_rules() -> None:
    pool = _spec(kinds.SRIOV_NETWORK_POOL_CONFIG)["properties"]
    assert pool["maxUnavailable"]["x-kubernetes-int-or-string"] is True
    assert pool["maxUnavailable"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert pool["nodeSelector"]["x-kubernetes-map-type"] == "atomic"
    assert pool["rdmaMode"]["enum"] == ["shared", "exclusive"]
    cfg = _spec(kinds.SRIOV_OPERATOR_CONFIG)["properties"]
    assert (cfg["logLevel"]["minimum"], cfg["logLevel"]["maximum"]) == (0, 2)
    assert cfg["configurationMode"]["enum"] == ["daemon", "systemd"]
    assert cfg["disablePlugins"]["items"]["enum"] == ["mellanox"]
    assert cfg["featureGates"]["additionalProperties"] == {"type": "boolean"}


def _structural(schema: dict[str, Any], path: str) -> None:
    """Every node specifies a type (or is int-or-string / preserve-unknown), as structural schemas need."""
    assert "type" in schema or schema.get("x-kubernetes-int-or-string"), path
    for name, sub in schema.get("properties", {}).items():
        _structural(sub, f"{path}.{name}")
    if "items" in schema:
        _structural(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        _structural(schema["additionalProperties"], f"{path}{{}}")


def test_schemas_are_structural() -> None:
    for ks in SCHEMAS:
        _structural(openapi_schema(ks.kind), ks.kind.kind)


def test_the_generator_refuses_what_openapi_cannot_express() -> None:
    from typing import Literal, TypedDict

    import pytest

    from sriovop.api.v1.schema.openapi import SchemaError, object_schema, type_schema

    class Bad(TypedDict, total=False):
        x: float | str

    with pytest.raises(SchemaError, match=r"Bad.x: only `int \| str` unions"):
        object_schema(Bad)
    with pytest.raises(SchemaError, match="mixed Literal"):
        type_schema(Literal["a", 1])
    with pytest.raises(SchemaError, match="map keys must be str"):
        type_schema(dict[int, str])
    with pytest.raises(SchemaError, match="not a TypedDict"):
        object_schema(dict)
