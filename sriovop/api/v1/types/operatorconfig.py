"""SriovOperatorConfig: cluster-wide operator settings; only the object named `default` is honoured."""

from typing import Annotated, Literal, TypedDict

from sriovop.api.v1.schema.markers import Doc, Maximum, Minimum
from sriovop.api.v1.types.meta import Conditions

ConfigurationMode = Literal["daemon", "systemd"]
PluginName = Annotated[Literal["mellanox"], Doc("PluginNameValue defines the plugin name")]


class SriovOperatorConfigSpec(TypedDict, total=False):
    """SriovOperatorConfigSpec defines the desired state of SriovOperatorConfig."""

    configDaemonNodeSelector: Annotated[dict[str, str],
        Doc(
            "NodeSelector selects the nodes to be configured"
        )]
    enableInjector: Annotated[
        bool, Doc("Flag to control whether the network resource injector webhook shall be deployed")
    ]
    enableOperatorWebhook: Annotated[
        bool, Doc("Flag to control whether the operator admission controller webhook shall be deployed")
    ]
    logLevel: Annotated[
        int,
        Doc(
            "Flag to control the log verbose level of the operator. Set to '0' to show only the basic logs. "
            "And set to '2' to show all the available logs."
        ),
        Minimum(0),
        Maximum(2),
    ]
    disableDrain: Annotated[bool, Doc("Flag to disable nodes drain during debugging")]
    enableOvsOffload: Annotated[
        bool,
        Doc(
            "Flag to enable OVS hardware offload. Set to 'true' to provision switchdev-configuration.service "
            "and enable OpenvSwitch hw-offload on nodes."
        ),
    ]
    configurationMode: Annotated[
        ConfigurationMode,
        Doc(
            "Flag to enable the sriov-network-config-daemon to use a systemd service to configure SR-IOV "
            "devices on boot. Default mode: daemon"
        ),
    ]
    useCDI: Annotated[bool,
        Doc(
            "Flag to enable Container Device Interface mode for SR-IOV Network Device Plugin"
        )]
    disablePlugins: Annotated[
        list[PluginName], Doc("DisablePlugins is a list of sriov-network-config-daemon plugins to disable")
    ]
    featureGates: Annotated[dict[str, bool], Doc("FeatureGates to enable experimental features")]
    configDaemonEnvVars: Annotated[
        dict[str, str],
        Doc(
            "ConfigDaemonEnvVars allows to specify custom environment variables for the "
            "sriov-network-config-daemon"
        ),
    ]


class SriovOperatorConfigStatus(TypedDict, total=False):
    """SriovOperatorConfigStatus defines the observed state of SriovOperatorConfig."""

    injector: Annotated[str, Doc("Show the runtime status of the network resource injector webhook")]
    operatorWebhook: Annotated[str,
        Doc(
            "Show the runtime status of the operator admission controller webhook"
        )]
    conditions: Conditions
