"""The table that ties each Kind to its spec/status types, CRD names and printer columns.

Everything derived from the types (CRD YAML, defaulting, local validation) starts from this table.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from sriovop.api.v1 import kinds
from sriovop.api.v1.types.meta import NetworkStatus
from sriovop.api.v1.types.nad import NetworkAttachmentDefinitionSpec
from sriovop.api.v1.types.networks import OVSNetworkSpec, SriovIBNetworkSpec, SriovNetworkSpec
from sriovop.api.v1.types.nodestate import SriovNetworkNodeStateSpec, SriovNetworkNodeStateStatus
from sriovop.api.v1.types.operatorconfig import SriovOperatorConfigSpec, SriovOperatorConfigStatus
from sriovop.api.v1.types.policy import SriovNetworkNodePolicySpec, SriovNetworkNodePolicyStatus
from sriovop.api.v1.types.poolconfig import SriovNetworkPoolConfigSpec, SriovNetworkPoolConfigStatus
from sriovop.runtime.kinds import Kind


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str

    def to_crd(self) -> dict[str, str]:
        return {"jsonPath": self.json_path, "name": self.name, "type": self.type}


@dataclass(frozen=True)
class KindSchema:
    kind: Kind
    singular: str
    spec: type
    status: type | None
    printer_columns: tuple[PrinterColumn, ...] = ()
    short_names: tuple[str, ...] = ()
    description: str = ""
    #: Status subresource (every sriovnetwork.openshift.io kind has one; the NAD does not).
    status_subresource: bool = True
    crd_file: str = field(default="")

    @property
    def crd_name(self) -> str:
        return f"{self.kind.plural}.{self.kind.group}"

    @property
    def file_name(self) -> str:
        return self.crd_file or f"{self.kind.group}_{self.kind.plural}.yaml"


_READY = PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status')
_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")

SCHEMAS: tuple[KindSchema, ...] = (
    KindSchema(kinds.SRIOV_NETWORK_NODE_POLICY, "sriovnetworknodepolicy",
               SriovNetworkNodePolicySpec, SriovNetworkNodePolicyStatus,
               (PrinterColumn("Matched", "integer", ".status.matchedNodes"),
                PrinterColumn("Ready Nodes", "integer", ".status.readyNodes"),
                _READY,
                PrinterColumn("Degraded", "string", '.status.conditions[?(@.type=="Degraded")].status'),
                _AGE)),
    KindSchema(kinds.SRIOV_NETWORK, "sriovnetwork", SriovNetworkSpec, NetworkStatus, (_READY, _AGE)),
    KindSchema(kinds.SRIOV_IB_NETWORK, "sriovibnetwork", SriovIBNetworkSpec, NetworkStatus, (_READY, _AGE)),
    KindSchema(kinds.OVS_NETWORK, "ovsnetwork", OVSNetworkSpec, NetworkStatus, (_READY, _AGE)),
    KindSchema(
        kinds.SRIOV_NETWORK_NODE_STATE, "sriovnetworknodestate",
        SriovNetworkNodeStateSpec, SriovNetworkNodeStateStatus,
        (
            PrinterColumn("Sync Status", "string", ".status.syncStatus"),
            PrinterColumn("Desired Sync State", "string",
                          r".metadata.annotations.sriovnetwork\.openshift\.io/desired-state"),
            PrinterColumn("Current Sync State", "string",
                          r".metadata.annotations.sriovnetwork\.openshift\.io/current-state"),
            _AGE,
        ),
    ),
    KindSchema(kinds.SRIOV_OPERATOR_CONFIG, "sriovoperatorconfig",
               SriovOperatorConfigSpec, SriovOperatorConfigStatus, (_READY, _AGE)),
    KindSchema(kinds.SRIOV_NETWORK_POOL_CONFIG, "sriovnetworkpoolconfig",
               SriovNetworkPoolConfigSpec, SriovNetworkPoolConfigStatus,
               (PrinterColumn("Nodes", "integer", ".status.nodeCount"),
                PrinterColumn("Draining", "string", ".status.drainingNodes"),
                _READY, _AGE)),
    # Owned by Multus in a real cluster; shipped (identical in shape to Multus' CRD) so that a bare
    # control plane (tests, the demo) can store the NADs the network controllers render.
    KindSchema(
        kinds.NETWORK_ATTACHMENT_DEFINITION, "network-attachment-definition",
        NetworkAttachmentDefinitionSpec, None,
        short_names=("net-attach-def",),
        description=(
            "NetworkAttachmentDefinition is a CRD schema specified by the Network Plumbing Working Group "
            "to express the intent for attaching pods to one or more logical or physical networks. More "
            "information available at: https://github.com/k8snetworkplumbingwg/multi-net-spec"
        ),
        status_subresource=False,
    ),
)

_BY_KIND: dict[str, KindSchema] = {s.kind.kind: s for s in SCHEMAS}


def schema_for(kind: Kind | str) -> KindSchema:
    name = kind if isinstance(kind, str) else kind.kind
    try:
        return _BY_KIND[name]
    except KeyError:
        raise KeyError(f"no schema for kind {name!r}; known: {sorted(_BY_KIND)}") from None


@functools.cache
def openapi_schema(kind: Kind | str) -> dict[str, Any]:
    """The openAPIV3Schema of a kind (cached; treat as read-only)."""
    from sriovop.api.v1.schema.crd import root_schema

    return root_schema(schema_for(kind))
