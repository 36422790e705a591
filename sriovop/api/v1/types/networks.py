"""SriovNetwork, SriovIBNetwork and OVSNetwork: each renders one NetworkAttachmentDefinition."""

from typing import Annotated, Literal, Required, TypedDict

from sriovop.api.v1.schema.markers import Default, Doc, Maximum, Minimum

OnOff = Literal["on", "off"]
LinkState = Literal["auto", "enable", "disable"]
VlanProto = Literal["802.1q", "802.1Q", "802.1ad", "802.1AD"]
CniLogLevel = Literal["panic", "error", "warning", "info", "debug", ""]

_NETWORK_NAMESPACE = Doc("Namespace of the NetworkAttachmentDefinition custom resource")
_IPAM = Doc("IPAM configuration to be used for this network (raw JSON).")
_META_PLUGINS = Doc(
    "MetaPluginsConfig configuration to be used in order to chain metaplugins to the sriov interface "
    "returned by the operator (raw JSON)."
)
_LINK_STATE = Doc("VF link state (enable|disable|auto)")
_CAPS_ETH = Doc(
    "Capabilities to be configured for this network (raw JSON). "
    """Capabilities supported: (mac|ips), e.g. '{"mac": true}'"""
)
_CAPS_IB = Doc(
    "Capabilities to be configured for this network (raw JSON). "
    """Capabilities supported: (infinibandGUID), e.g. '{"infinibandGUID": true}'"""
)


class SriovNetworkSpec(TypedDict, total=False):
    """SriovNetworkSpec defines the desired state of SriovNetwork."""

    networkNamespace: Annotated[str, _NETWORK_NAMESPACE]
    resourceName: Required[Annotated[str, Doc("SRIOV Network device plugin endpoint resource name")]]
    capabilities: Annotated[str, _CAPS_ETH]
    ipam: Annotated[str, _IPAM]
    vlan: Annotated[int, Doc("VLAN ID to assign for the VF. Defaults to 0."), Minimum(0), Maximum(4094)]
    vlanQoS: Annotated[int, Doc("VLAN QoS ID to assign for the VF. Defaults to 0."), Minimum(0), Maximum(7)]
    vlanProto: Annotated[VlanProto, Doc("VLAN protocol to assign for the VF (802.1q|802.1ad).")]
    spoofChk: Annotated[OnOff, Doc("VF spoof check, (on|off)")]
    trust: Annotated[OnOff, Doc("VF trust mode (on|off)")]
    linkState: Annotated[LinkState, _LINK_STATE]
    minTxRate: Annotated[
        int,
        Doc(
            "Minimum tx rate, in Mbps, for the VF. Defaults to 0 (no rate limiting). "
            "min_tx_rate should be <= max_tx_rate."
        ),
        Minimum(0),
    ]
    maxTxRate: Annotated[
        int, Doc("Maximum tx rate, in Mbps, for the VF. Defaults to 0 (no rate limiting)"), Minimum(0)
    ]
    metaPlugins: Annotated[str, _META_PLUGINS]
    logLevel: Annotated[
        CniLogLevel,
        Doc(
            "LogLevel sets the log level of the SRIOV CNI plugin - either of panic, error, "
            "warning, info, debug. Defaults to info if left blank."
        ),
        Default("info"),
    ]
    logFile: Annotated[str,
        Doc(
            "LogFile sets the log file of the SRIOV CNI plugin logs. If unset (default), this "
            "will log to stderr and thus to multus and container runtime logs."
        )]


class SriovIBNetworkSpec(TypedDict, total=False):
    """SriovIBNetworkSpec defines the desired state of SriovIBNetwork."""

    networkNamespace: Annotated[str, _NETWORK_NAMESPACE]
    resourceName: Required[Annotated[str, Doc("SRIOV Network device plugin endpoint resource name")]]
    capabilities: Annotated[str, _CAPS_IB]
    ipam: Annotated[str, _IPAM]
    linkState: Annotated[LinkState, _LINK_STATE]
    metaPlugins: Annotated[str, _META_PLUGINS]


_VLAN_ID = (Minimum(0), Maximum(4095))


class TrunkConfig(TypedDict, total=False):
    """TrunkConfig contains configuration for bridge trunk."""

    minID: Annotated[int, *_VLAN_ID]
    maxID: Annotated[int, *_VLAN_ID]
    id: Annotated[int, *_VLAN_ID]


class OVSNetworkSpec(TypedDict, total=False):
    """OVSNetworkSpec defines the desired state of OVSNetwork."""

    networkNamespace: Annotated[str, _NETWORK_NAMESPACE]
    resourceName: Required[Annotated[str, Doc("OVS Network device plugin endpoint resource name")]]
    capabilities: Annotated[str, _CAPS_ETH]
    ipam: Annotated[str, _IPAM]
    metaPlugins: Annotated[str,
        Doc(
            "MetaPluginsConfig configuration to be used in order to chain metaplugins"
        )]
    bridge: Annotated[
        str,
            Doc(
                "name of the OVS bridge, if not set OVS will automatically select bridge based on "
                "VF PCI address"
            )
    ]
    vlan: Annotated[int, Doc("Vlan to assign for the OVS port"), *_VLAN_ID]
    mtu: Annotated[int, Doc("Mtu for the OVS port"), Minimum(0)]
    trunk: Annotated[list[TrunkConfig], Doc("Trunk configuration for the OVS port")]
    interfaceType: Annotated[str, Doc("The type of interface on ovs.")]
