"""The sample manifests and a table of objects that break one CRD rule each, shared by unit and integration tests."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SAMPLES_DIR = REPO / "manifests" / "samples"
CRD_DIR = REPO / "manifests" / "crds"


def load_samples() -> list[tuple[str, dict[str, Any]]]:
    """(file name, object) for every document in manifests/samples/*.yaml."""
    out = []
    for path in sorted(SAMPLES_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out.append((path.name, doc))
    return out


def sample(kind: str, name: str | None = None) -> dict[str, Any]:
    """A deep copy of the first sample of a kind (optionally with this metadata.name)."""
    for _file, obj in load_samples():
        if obj["kind"] == kind and (name is None or obj["metadata"]["name"] == name):
            return copy.deepcopy(obj)
    raise LookupError(f"no sample of kind {kind} named {name}")


def _minimal_policy() -> dict[str, Any]:
    return {
        "apiVersion": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkNodePolicy",
        "metadata": {"name": "p"},
        "spec": {"resourceName": "r", "nodeSelector": {}, "numVfs": 1, "nicSelector": {"vendor": "8086"}},
    }


def _minimal(kind: str) -> dict[str, Any]:
    if kind == "SriovNetworkNodePolicy":
        return _minimal_policy()
    spec: dict[str, Any] = {"resourceName": "r"} if kind in ("SriovNetwork", "SriovIBNetwork", "OVSNetwork") else {}
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}


def _set(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur = obj
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value


def _delete(obj: dict[str, Any], path: str) -> None:
    parts = path.split(".")
    cur = obj
    for p in parts[:-1]:
        cur = cur[p]
    del cur[parts[-1]]


@dataclass(frozen=True)
class BadCase:
    """An object breaking exactly one schema rule; `field` is the path the API server must name."""

    id: str
    kind: str
    field: str
    set_value: Any = None
    delete: bool = False
    set_path: str | None = None

    def build(self) -> dict[str, Any]:
        obj = _minimal(self.kind)
        path = self.set_path or self.field
        if self.delete:
            _delete(obj, path)
        else:
            _set(obj, path, copy.deepcopy(self.set_value))
        return obj


_P = "SriovNetworkNodePolicy"
_N = "SriovNetwork"
_IB = "SriovIBNetwork"
_O = "OVSNetwork"
_S = "SriovNetworkNodeState"
_C = "SriovOperatorConfig"
_PC = "SriovNetworkPoolConfig"

BAD_CASES: tuple[BadCase, ...] = (
    # SriovNetworkNodePolicy
    BadCase("policy-no-resourceName", _P, "spec.resourceName", delete=True),
    BadCase("policy-no-nodeSelector", _P, "spec.nodeSelector", delete=True),
    BadCase("policy-no-numVfs", _P, "spec.numVfs", delete=True),
    BadCase("policy-no-nicSelector", _P, "spec.nicSelector", delete=True),
    BadCase("policy-priority-negative", _P, "spec.priority", -1),
    BadCase("policy-priority-100", _P, "spec.priority", 100),
    BadCase("policy-mtu-0", _P, "spec.mtu", 0),
    BadCase("policy-numVfs-negative", _P, "spec.numVfs", -1),
    BadCase("policy-numVfs-string", _P, "spec.numVfs", "8"),
    BadCase("policy-deviceType-bad", _P, "spec.deviceType", "igb_uio"),
    BadCase("policy-linkType-bad", _P, "spec.linkType", "Eth"),
    BadCase("policy-eSwitchMode-bad", _P, "spec.eSwitchMode", "offload"),
    BadCase("policy-vdpaType-bad", _P, "spec.vdpaType", "vdpa"),
    BadCase("policy-isRdma-string", _P, "spec.isRdma", "yes"),
    BadCase("policy-nodeSelector-int-value", _P, "spec.nodeSelector.a", 1),
    BadCase("policy-pfNames-not-list", _P, "spec.nicSelector.pfNames", "ens1"),
    BadCase("policy-failMode-bad", _P, "spec.bridge.ovs.bridge.failMode", "open"),
    BadCase("policy-mtuRequest-string", _P, "spec.bridge.ovs.uplink.interface.mtuRequest", "9000"),
    # SriovNetwork
    BadCase("network-no-resourceName", _N, "spec.resourceName", delete=True),
    BadCase("network-vlan-4095", _N, "spec.vlan", 4095),
    BadCase("network-vlan-negative", _N, "spec.vlan", -1),
    BadCase("network-vlanQoS-8", _N, "spec.vlanQoS", 8),
    BadCase("network-vlanProto-bad", _N, "spec.vlanProto", "802.1x"),
    BadCase("network-spoofChk-bool", _N, "spec.spoofChk", "true"),
    BadCase("network-trust-bad", _N, "spec.trust", "yes"),
    BadCase("network-linkState-bad", _N, "spec.linkState", "up"),
    BadCase("network-minTxRate-negative", _N, "spec.minTxRate", -1),
    BadCase("network-maxTxRate-negative", _N, "spec.maxTxRate", -5),
    BadCase("network-logLevel-bad", _N, "spec.logLevel", "trace"),
    BadCase("network-ipam-object", _N, "spec.ipam", {"type": "host-local"}),
    # SriovIBNetwork
    BadCase("ibnetwork-no-resourceName", _IB, "spec.resourceName", delete=True),
    BadCase("ibnetwork-linkState-bad", _IB, "spec.linkState", "down"),
    # OVSNetwork
    BadCase("ovsnetwork-no-resourceName", _O, "spec.resourceName", delete=True),
    BadCase("ovsnetwork-vlan-4096", _O, "spec.vlan", 4096),
    BadCase("ovsnetwork-trunk-maxID-4096", _O, "spec.trunk[0].maxID", [{"minID": 1, "maxID": 4096}],
            set_path="spec.trunk"),
    BadCase("ovsnetwork-trunk-id-negative", _O, "spec.trunk[0].id", [{"id": -1}], set_path="spec.trunk"),
    # SriovNetworkNodeState
    BadCase("nodestate-interface-no-pciAddress", _S, "spec.interfaces[0].pciAddress", [{"numVfs": 1}],
            set_path="spec.interfaces"),
    BadCase("nodestate-rdmaMode-bad", _S, "spec.system.rdmaMode", "private"),
    BadCase("nodestate-bridge-no-name", _S, "spec.bridges.ovs[0].name", {"ovs": [{"uplinks": []}]},
            set_path="spec.bridges"),
    BadCase("nodestate-uplink-no-pciAddress", _S, "spec.bridges.ovs[0].uplinks[0].pciAddress",
            {"ovs": [{"name": "br", "uplinks": [{"name": "ens1"}]}]}, set_path="spec.bridges"),
    # SriovOperatorConfig
    BadCase("operatorconfig-logLevel-3", _C, "spec.logLevel", 3),
    BadCase("operatorconfig-logLevel-negative", _C, "spec.logLevel", -1),
    BadCase("operatorconfig-configurationMode-bad", _C, "spec.configurationMode", "oneshot"),
    BadCase("operatorconfig-disablePlugins-bad", _C, "spec.disablePlugins[0]", ["intel"],
            set_path="spec.disablePlugins"),
    BadCase("operatorconfig-featureGates-string", _C, "spec.featureGates.metricsExporter", "true",
            set_path="spec.featureGates.metricsExporter"),
    # SriovNetworkPoolConfig
    BadCase("poolconfig-rdmaMode-bad", _PC, "spec.rdmaMode", "both"),
    BadCase("poolconfig-maxUnavailable-bool", _PC, "spec.maxUnavailable", True),
    BadCase("poolconfig-matchExpressions-no-operator", _PC, "spec.nodeSelector.matchExpressions[0].operator",
            {"matchExpressions": [{"key": "a"}]}, set_path="spec.nodeSelector"),
)
