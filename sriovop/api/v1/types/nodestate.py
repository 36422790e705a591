"""SriovNetworkNodeState: one per node (name = node name). Spec written by the operator, status by the daemon.

Note the upstream JSON spellings kept on purpose: `totalvfs` (lower case), `Vfs` and `Vlan` (capital V).
"""

from typing import Annotated, Literal, Required, TypedDict

from sriovop.api.v1.schema.markers import Doc
from sriovop.api.v1.types.policy import OVSBridgeConfig, OVSInterfaceConfig

RdmaMode = Literal["shared", "exclusive"]
_RDMA_MODE = Doc('RDMA subsystem. Allowed value "shared", "exclusive".')


class VfGroup(TypedDict, total=False):
    """A range of VFs on one PF handed to one device-plugin resource by one policy."""

    resourceName: str
    deviceType: str
    vfRange: str
    policyName: str
    mtu: int
    isRdma: bool
    vdpaType: str


class Interface(TypedDict, total=False):
    """Desired configuration of one PF."""

    pciAddress: Required[str]
    numVfs: int
    mtu: int
    name: str
    linkType: str
    eSwitchMode: str
    externallyManaged: bool
    vfGroups: list[VfGroup]


class OVSUplinkConfigExt(TypedDict, total=False):
    """OVSUplinkConfigExt contains configuration for the concrete OVS uplink(PF)."""

    pciAddress: Required[Annotated[str, Doc("pci address of the PF")]]
    name: Annotated[str, Doc("name of the PF interface")]
    interface: Annotated[OVSInterfaceConfig, Doc("configuration from the Interface OVS table for the PF")]


class OVSConfigExt(TypedDict, total=False):
    """OVSConfigExt contains configuration for the concrete OVS bridge."""

    name: Required[Annotated[str, Doc("name of the bridge")]]
    bridge: Annotated[OVSBridgeConfig, Doc("bridge-level configuration for the bridge")]
    uplinks: Annotated[
        list[OVSUplinkConfigExt],
        Doc("uplink-level bridge configuration for each uplink(PF). currently must contain only one element"),
    ]


class Bridges(TypedDict, total=False):
    """Bridges contains list of bridges."""

    ovs: list[OVSConfigExt]


class System(TypedDict, total=False):
    """Node-wide settings."""

    rdmaMode: Annotated[RdmaMode, _RDMA_MODE]


class SriovNetworkNodeStateSpec(TypedDict, total=False):
    """SriovNetworkNodeStateSpec defines the desired state of SriovNetworkNodeState."""

    interfaces: list[Interface]
    bridges: Annotated[Bridges, Doc("Bridges contains list of bridges")]
    system: System


class VirtualFunction(TypedDict, total=False):
    """A VF as discovered on the host."""

    name: str
    mac: str
    assigned: str
    driver: str
    pciAddress: Required[str]
    vendor: str
    deviceID: str
    Vlan: int
    mtu: int
    vfID: Required[int]
    vdpaType: str
    representorName: str
    guid: str


class InterfaceExt(TypedDict, total=False):
    """A PF as discovered on the host, with its VFs."""

    name: str
    mac: str
    driver: str
    pciAddress: Required[str]
    vendor: str
    deviceID: str
    netFilter: str
    mtu: int
    numVfs: int
    linkSpeed: str
    linkType: str
    linkAdminState: str
    eSwitchMode: str
    externallyManaged: bool
    totalvfs: int
    Vfs: list[VirtualFunction]
    altNames: list[str]


class SriovNetworkNodeStateStatus(TypedDict, total=False):
    """SriovNetworkNodeStateStatus defines the observed state of SriovNetworkNodeState."""

    interfaces: list[InterfaceExt]
    bridges: Annotated[Bridges, Doc("Bridges contains list of bridges")]
    system: System
    syncStatus: str
    lastSyncError: str
