"""SriovNetworkNodePolicy: which NICs on which nodes get how many VFs, exposed as which resource."""

from typing import Annotated, Literal, Required, TypedDict

from sriovop.api.v1.schema.markers import Default, Doc, Maximum, Minimum
from sriovop.api.v1.types.meta import Conditions

DeviceType = Literal["netdevice", "vfio-pci"]
LinkType = Literal["eth", "ETH", "ib", "IB"]
ESwitchMode = Literal["legacy", "switchdev"]
VdpaType = Literal["virtio", "vhost"]
FailMode = Literal["secure", "standalone"]


class SriovNetworkNicSelector(TypedDict, total=False):
    """NicSelector selects the NICs to be configured.

    Set fields are ANDed; an empty selector matches nothing.
    """

    vendor: Annotated[str, Doc('The vendor hex code of SR-IoV device, e.g. "8086", "15b3".')]
    deviceID: Annotated[str, Doc('The PF device hex code of SR-IoV device, e.g. "158b", "1017".')]
    rootDevices: Annotated[list[str], Doc("PCI address of SR-IoV PF.")]
    pfNames: Annotated[
        list[str],
        Doc('Name (or alternative name) of SR-IoV PF, optionally with a VF index range: "ens1f0#0-3".'),
    ]
    netFilter: Annotated[
        str,
        Doc(
            """Infrastructure Networking selection filter.
            Allowed values:
            - "openstack/NetworkID:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
            - "aws/NetworkID:xxxxxxxx\""""
        ),
    ]


class OVSBridgeConfig(TypedDict, total=False):
    """OVSBridgeConfig contains some options from the Bridge table in OVSDB."""

    datapathType: Annotated[str, Doc("configure datapath_type field in the Bridge table in OVSDB")]
    externalIDs: Annotated[dict[str, str],
        Doc(
            "IDs to inject to external_ids field in the Bridge table in OVSDB"
        )]
    otherConfig: Annotated[
        dict[str, str], Doc("additional options to inject to other_config field in the bridge table in OVSDB")
    ]
    failMode: Annotated[
        FailMode,
            Doc(
                "configure fail_mode field in the Bridge table in OVSDB (optional). 'secure' or "
                "'standalone'."
            )
    ]


class OVSInterfaceConfig(TypedDict, total=False):
    """OVSInterfaceConfig contains some options from the Interface table of the OVSDB for PF."""

    type: Annotated[str, Doc("type field in the Interface table in OVSDB")]
    options: Annotated[dict[str, str], Doc("options field in the Interface table in OVSDB")]
    externalIDs: Annotated[dict[str, str], Doc("external_ids field in the Interface table in OVSDB")]
    otherConfig: Annotated[dict[str, str], Doc("other_config field in the Interface table in OVSDB")]
    mtuRequest: Annotated[int, Doc("mtu_request field in the Interface table in OVSDB")]


class OVSUplinkConfig(TypedDict, total=False):
    """OVSUplinkConfig contains PF interface configuration for the bridge."""

    interface: Annotated[OVSInterfaceConfig, Doc("contains settings for PF interface in the OVS bridge")]


class OVSConfig(TypedDict, total=False):
    """OVSConfig optional configuration for OVS bridge and uplink Interface."""

    bridge: Annotated[OVSBridgeConfig, Doc("contains bridge level settings")]
    uplink: Annotated[OVSUplinkConfig, Doc("contains settings for uplink (PF)")]


class Bridge(TypedDict, total=False):
    """Software bridge configuration for the matching PFs (switchdev only)."""

    ovs: Annotated[OVSConfig, Doc("contains configuration for the OVS bridge,")]


class SriovNetworkNodePolicySpec(TypedDict, total=False):
    """SriovNetworkNodePolicySpec defines the desired state of SriovNetworkNodePolicy."""

    resourceName: Required[Annotated[str, Doc("SRIOV Network device plugin endpoint resource name")]]
    nodeSelector: Required[Annotated[dict[str, str], Doc("NodeSelector selects the nodes to be configured")]]
    priority: Annotated[
        int,
        Doc("Priority of the policy, higher priority policies can override lower ones (0 is the highest)."),
        Minimum(0),
        Maximum(99),
    ]
    mtu: Annotated[int, Doc("MTU of VF"), Minimum(1)]
    numVfs: Required[Annotated[int, Doc("Number of VFs for each PF"), Minimum(0)]]
    nicSelector: Required[Annotated[SriovNetworkNicSelector,
        Doc(
            "NicSelector selects the NICs to be configured"
        )]]
    deviceType: Annotated[
        DeviceType,
        Doc(
            'The driver type for configured VFs. Allowed value "netdevice", "vfio-pci". '
            'Defaults to netdevice.'
        ),
        Default("netdevice"),
    ]
    isRdma: Annotated[bool, Doc("RDMA mode. Defaults to false.")]
    needVhostNet: Annotated[bool, Doc("mount vhost-net device. Defaults to false.")]
    linkType: Annotated[LinkType, Doc('NIC Link Type. Allowed value "eth", "ETH", "ib", and "IB".')]
    eSwitchMode: Annotated[ESwitchMode, Doc('NIC Device Mode. Allowed value "legacy","switchdev".')]
    vdpaType: Annotated[VdpaType, Doc('VDPA device type. Allowed value "virtio", "vhost"')]
    excludeTopology: Annotated[
        bool,
        Doc(
            "Exclude device's NUMA node when advertising this resource by SRIOV network "
            "device plugin. Default to false."
        ),
    ]
    externallyManaged: Annotated[
        bool,
        Doc("don't create the virtual function only allocated them to the device plugin. Defaults to false."),
    ]
    bridge: Annotated[
        Bridge, Doc("contains bridge configuration for matching PFs, valid only for eSwitchMode==switchdev")
    ]


class SriovNetworkNodePolicyStatus(TypedDict, total=False):
    """SriovNetworkNodePolicyStatus defines the observed state of SriovNetworkNodePolicy.

    Written by sriovop's operator (additive: clients that do not know these fields ignore them)."""

    matchedNodes: Annotated[int, Doc("Nodes with a config daemon where the policy selects at least one PF."),
                            Minimum(0)]
    readyNodes: Annotated[int, Doc("Matched nodes whose configuration is applied (Succeeded, no drain under way)."),
                          Minimum(0)]
    conditions: Conditions
