"""Typed views over plain JSON dicts: zero-cost `cast`s that give mypy the shape of a spec or status.

Objects stay dicts (the informer cache hands out read-only dicts; nothing is converted). Use these to
get type-checked key access: `policy_spec(p)["numVfs"]`. Missing `spec`/`status` read as empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from sriovop.api.v1.types.meta import Condition
from sriovop.api.v1.types.nad import NetworkAttachmentDefinitionSpec
from sriovop.api.v1.types.networks import OVSNetworkSpec, SriovIBNetworkSpec, SriovNetworkSpec
from sriovop.api.v1.types.nodestate import (
    InterfaceExt,
    SriovNetworkNodeStateSpec,
    SriovNetworkNodeStateStatus,
)
from sriovop.api.v1.types.operatorconfig import SriovOperatorConfigSpec
from sriovop.api.v1.types.policy import SriovNetworkNodePolicySpec
from sriovop.api.v1.types.poolconfig import SriovNetworkPoolConfigSpec

_EMPTY: Mapping[str, Any] = {}


def _part(obj: Mapping[str, Any], key: str) -> Any:
    value = obj.get(key)
    return value if value is not None else _EMPTY


def policy_spec(obj: Mapping[str, Any]) -> SriovNetworkNodePolicySpec:
    return cast(SriovNetworkNodePolicySpec, _part(obj, "spec"))


def sriov_network_spec(obj: Mapping[str, Any]) -> SriovNetworkSpec:
    return cast(SriovNetworkSpec, _part(obj, "spec"))


def sriov_ib_network_spec(obj: Mapping[str, Any]) -> SriovIBNetworkSpec:
    return cast(SriovIBNetworkSpec, _part(obj, "spec"))


def ovs_network_spec(obj: Mapping[str, Any]) -> OVSNetworkSpec:
    return cast(OVSNetworkSpec, _part(obj, "spec"))


def node_state_spec(obj: Mapping[str, Any]) -> SriovNetworkNodeStateSpec:
    return cast(SriovNetworkNodeStateSpec, _part(obj, "spec"))


def node_state_status(obj: Mapping[str, Any]) -> SriovNetworkNodeStateStatus:
    return cast(SriovNetworkNodeStateStatus, _part(obj, "status"))


def node_state_interfaces(obj: Mapping[str, Any]) -> list[InterfaceExt]:
    """`status.interfaces` of a NodeState ([] until the daemon has reported)."""
    return list(node_state_status(obj).get("interfaces") or ())


def operator_config_spec(obj: Mapping[str, Any]) -> SriovOperatorConfigSpec:
    return cast(SriovOperatorConfigSpec, _part(obj, "spec"))


def pool_config_spec(obj: Mapping[str, Any]) -> SriovNetworkPoolConfigSpec:
    return cast(SriovNetworkPoolConfigSpec, _part(obj, "spec"))


def nad_spec(obj: Mapping[str, Any]) -> NetworkAttachmentDefinitionSpec:
    return cast(NetworkAttachmentDefinitionSpec, _part(obj, "spec"))


def conditions(obj: Mapping[str, Any]) -> list[Condition]:
    return list(_part(obj, "status").get("conditions") or ())


def find_condition(obj: Mapping[str, Any], type_: str) -> Condition | None:
    return next((c for c in conditions(obj) if c.get("type") == type_), None)
