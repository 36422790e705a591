"""SriovNetworkPoolConfig: groups nodes for drain parallelism (maxUnavailable) and RDMA mode."""

from typing import Annotated, TypedDict

from sriovop.api.v1.schema.markers import Doc, Minimum
from sriovop.api.v1.types.meta import AtomicLabelSelector, Conditions
from sriovop.api.v1.types.nodestate import RdmaMode


class OvsHardwareOffloadConfig(TypedDict, total=False):
    """OVS hardware offload settings of a pool (OpenShift MachineConfigPool name)."""

    name: Annotated[
        str,
        Doc(
            """Name is mandatory and must be unique.
            On Kubernetes: Name is the name of OvsHardwareOffloadConfig
            On OpenShift: Name is the name of MachineConfigPool to be enabled with OVS hardware offload"""
        ),
    ]


class SriovNetworkPoolConfigSpec(TypedDict, total=False):
    """SriovNetworkPoolConfigSpec defines the desired state of SriovNetworkPoolConfig."""

    ovsHardwareOffloadConfig: Annotated[
        OvsHardwareOffloadConfig,
            Doc(
                "OvsHardwareOffloadConfig describes the OVS HWOL configuration for selected Nodes"
            )
    ]
    nodeSelector: Annotated[AtomicLabelSelector, Doc("nodeSelector specifies a label selector for Nodes")]
    maxUnavailable: Annotated[
        int | str,
        Doc(
            """maxUnavailable defines either an integer number or percentage
            of nodes in the pool that can go Unavailable during an update.

            A value larger than 1 will mean multiple nodes going unavailable during
            the update, which may affect your workload stress on the remaining nodes.
            Drain will respect Pod Disruption Budgets (PDBs) such as etcd quorum guards,
            even if maxUnavailable is greater than one."""
        ),
    ]
    rdmaMode: Annotated[RdmaMode, Doc('RDMA subsystem. Allowed value "shared", "exclusive".')]


class SriovNetworkPoolConfigStatus(TypedDict, total=False):
    """SriovNetworkPoolConfigStatus defines the observed state of SriovNetworkPoolConfig.

    Written by sriovop's operator (additive: clients that do not know these fields ignore them)."""

    nodeCount: Annotated[int, Doc("Nodes the pool's nodeSelector selects."), Minimum(0)]
    drainingNodes: Annotated[list[str], Doc("Nodes of the pool draining now (they hold a maxUnavailable slot).")]
    conditions: Conditions
