"""Names shared by the operator, the config daemon and the webhook: annotations, labels, states, defaults.

Every value here is part of the upstream wire contract (users' tooling and upstream components read
these exact strings), so they live in one place and are never spelled inline elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from sriovop.api.v1.kinds import GROUP

# --- namespaces, well-known object names -------------------------------------------------------
DEFAULT_OPERATOR_NAMESPACE: Final = "sriov-network-operator"
OPENSHIFT_OPERATOR_NAMESPACE: Final = "openshift-sriov-network-operator"
#: The only SriovOperatorConfig (and the deprecated ignored policy) that is honoured.
DEFAULT_CONFIG_NAME: Final = "default"
DEFAULT_POLICY_NAME: Final = "default"
SUPPORTED_NIC_IDS_CONFIGMAP: Final = "supported-nic-ids"
DEVICE_PLUGIN_CONFIGMAP: Final = "device-plugin-config"
FIELD_MANAGER: Final = "sriov-network-operator"

# --- environment variables ---------------------------------------------------------------------
ENV_NAMESPACE: Final = "NAMESPACE"
ENV_RESOURCE_PREFIX: Final = "RESOURCE_PREFIX"
ENV_DEV_MODE: Final = "DEV_MODE"  # "TRUE" allows unsupported NICs
ENV_CLUSTER_TYPE: Final = "CLUSTER_TYPE"
ENV_USE_EXTERNAL_DRAINER: Final = "USE_EXTERNAL_DRAINER"
ENV_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES: Final = "STALE_NODE_STATE_CLEANUP_DELAY_MINUTES"
DEFAULT_RESOURCE_PREFIX: Final = "openshift.io"  # helm's default; the operator exits when it is empty
DEFAULT_STALE_NODE_STATE_CLEANUP_DELAY_MINUTES: Final = 30

# --- policy ------------------------------------------------------------------------------------
#: Set by the mutating webhook when absent. Lower number = higher priority.
DEFAULT_POLICY_PRIORITY: Final = 99
MIN_POLICY_PRIORITY: Final = 0
MAX_POLICY_PRIORITY: Final = 99
#: The "previous priority" seed of the policy merge (above every legal priority).
POLICY_APPLY_INITIAL_PRIORITY: Final = 100
#: Mellanox firmware can raise totalvfs, so the webhook caps numVfs at this instead.
MELLANOX_MAX_NUM_VFS: Final = 128
RESOURCE_NAME_MAX_LENGTH: Final = 63
RESOURCE_NAME_PATTERN: Final = r"^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$"

DEVICE_TYPE_NETDEVICE: Final = "netdevice"
DEVICE_TYPE_VFIO_PCI: Final = "vfio-pci"
LINK_TYPE_ETH: Final = "eth"
LINK_TYPE_IB: Final = "ib"
ESWITCH_MODE_LEGACY: Final = "legacy"
ESWITCH_MODE_SWITCHDEV: Final = "switchdev"
VDPA_TYPE_VIRTIO: Final = "virtio"
VDPA_TYPE_VHOST: Final = "vhost"
RDMA_MODE_SHARED: Final = "shared"
RDMA_MODE_EXCLUSIVE: Final = "exclusive"

VENDOR_INTEL: Final = "8086"
VENDOR_MELLANOX: Final = "15b3"

# --- NodeState sync status ---------------------------------------------------------------------
SYNC_STATUS_SUCCEEDED: Final = "Succeeded"
SYNC_STATUS_IN_PROGRESS: Final = "InProgress"
SYNC_STATUS_FAILED: Final = "Failed"

# --- drain handshake ---------------------------------------------------------------------------
#: Node annotation written by the daemon.
NODE_DRAIN_ANNOTATION: Final = f"{GROUP}/state"
#: NodeState annotation written by the daemon (mirrors the node annotation).
NODE_STATE_DRAIN_ANNOTATION: Final = f"{GROUP}/desired-state"
#: NodeState annotation written by the drain controller.
NODE_STATE_DRAIN_ANNOTATION_CURRENT: Final = f"{GROUP}/current-state"
#: NodeState annotation ("true") that hands draining to another component.
NODE_STATE_EXTERNAL_DRAINER_ANNOTATION: Final = f"{GROUP}/use-external-drainer"
#: NodeState annotation (RFC3339) before which a stale NodeState is kept.
NODE_STATE_KEEP_UNTIL_ANNOTATION: Final = f"{GROUP}/keep-state-until"
#: MachineConfigPool annotation used on OpenShift while a pool is paused for draining.
MCP_PAUSE_ANNOTATION: Final = f"{GROUP}/state"

DRAIN_IDLE: Final = "Idle"
DRAIN_REQUIRED: Final = "Drain_Required"
REBOOT_REQUIRED: Final = "Reboot_Required"
DRAINING: Final = "Draining"
DRAIN_COMPLETE: Final = "DrainComplete"
#: Values the daemon writes (node `state`, NodeState `desired-state`).
DESIRED_DRAIN_STATES: Final = (DRAIN_IDLE, DRAIN_REQUIRED, REBOOT_REQUIRED)
#: Values the drain controller writes (NodeState `current-state`).
CURRENT_DRAIN_STATES: Final = (DRAIN_IDLE, DRAINING, DRAIN_COMPLETE)

# --- device plugin -----------------------------------------------------------------------------
#: Node label: "Enabled" when the node has a non-empty resource list, else "Disabled".
DEVICE_PLUGIN_LABEL: Final = f"{GROUP}/device-plugin"
DEVICE_PLUGIN_LABEL_ENABLED: Final = "Enabled"
DEVICE_PLUGIN_LABEL_DISABLED: Final = "Disabled"
#: Pod annotation of the device-plugin init container; the daemon removes it once configured.
DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION: Final = f"{GROUP}/device-plugin-wait-config"
DEVICE_PLUGIN_APP_LABEL: Final = "app"
DEVICE_PLUGIN_APP_LABEL_VALUE: Final = "sriov-device-plugin"

# --- networks and NADs -------------------------------------------------------------------------
#: NAD annotation naming the device-plugin resource: "<RESOURCE_PREFIX>/<resourceName>".
NAD_RESOURCE_NAME_ANNOTATION: Final = "k8s.v1.cni.cncf.io/resourceName"
#: Pod annotation listing the networks to attach (comma list or JSON list).
POD_NETWORKS_ANNOTATION: Final = "k8s.v1.cni.cncf.io/networks"
#: Pod annotation replacing the cluster network (Multus); the pod injector reads it too.
POD_DEFAULT_NETWORK_ANNOTATION: Final = "v1.multus-cni.io/default-network"
#: NAD annotation "<Kind>.<group>/<namespace>/<name>" naming the CR that owns it.
OWNER_REF_ANNOTATION: Final = f"{GROUP}/owner-ref"
#: Network CR annotation holding the namespace of the NAD last rendered.
LAST_NETWORK_NAMESPACE_ANNOTATION: Final = f"operator.{GROUP}/last-network-namespace"
CNI_VERSION: Final = "1.0.0"
CNI_TYPE_SRIOV: Final = "sriov"
CNI_TYPE_IB_SRIOV: Final = "ib-sriov"
CNI_TYPE_OVS: Final = "ovs"
#: The downward-API volume the pod injector adds, and where it is mounted.
PODNETINFO_VOLUME: Final = "podnetinfo"
PODNETINFO_MOUNT_PATH: Final = "/etc/podnetinfo"

# --- finalizers --------------------------------------------------------------------------------
NETATTDEF_FINALIZER: Final = f"netattdef.finalizers.{GROUP}"
POOL_CONFIG_FINALIZER: Final = f"poolconfig.finalizers.{GROUP}"
OPERATOR_CONFIG_FINALIZER: Final = f"operatorconfig.finalizers.{GROUP}"

# --- conditions --------------------------------------------------------------------------------
CONDITION_READY: Final = "Ready"
REASON_NETWORK_READY: Final = "NetworkReady"
REASON_NAMESPACE_NOT_FOUND: Final = "NamespaceNotFound"
REASON_NAD_INVALID: Final = "NetworkAttachmentDefinitionInvalid"
REASON_OPERATOR_CONFIG_READY: Final = "OperatorConfigReady"
REASON_OPERATOR_CONFIG_SYNC_FAILED: Final = "OperatorConfigSyncFailed"
REASON_UNSUPPORTED_CONFIGURATION: Final = "UnsupportedConfiguration"

# --- node selection ----------------------------------------------------------------------------
#: configDaemonNodeSelector when the operator config leaves it empty.
DEFAULT_CONFIG_DAEMON_NODE_SELECTOR: Final[Mapping[str, str]] = MappingProxyType(
    {"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}
)
#: The built-in pool for nodes that are in no SriovNetworkPoolConfig.
DEFAULT_POOL_MAX_UNAVAILABLE: Final = 1
#: MaxUnavailable result meaning "no limit".
UNLIMITED: Final = -1

# --- feature gates -----------------------------------------------------------------------------
FG_PARALLEL_NIC_CONFIG: Final = "parallelNicConfig"
FG_RESOURCE_INJECTOR_MATCH_CONDITION: Final = "resourceInjectorMatchCondition"
FG_METRICS_EXPORTER: Final = "metricsExporter"
FG_MANAGE_SOFTWARE_BRIDGES: Final = "manageSoftwareBridges"
FG_BLOCK_DEVICE_PLUGIN_UNTIL_CONFIGURED: Final = "blockDevicePluginUntilConfigured"
FG_MELLANOX_FIRMWARE_RESET: Final = "mellanoxFirmwareReset"
#: HEAD defaults; unknown gate names evaluate to False.
FEATURE_GATE_DEFAULTS: Final[Mapping[str, bool]] = MappingProxyType({
    FG_PARALLEL_NIC_CONFIG: False,
    FG_RESOURCE_INJECTOR_MATCH_CONDITION: False,
    FG_METRICS_EXPORTER: False,
    FG_MANAGE_SOFTWARE_BRIDGES: False,
    FG_BLOCK_DEVICE_PLUGIN_UNTIL_CONFIGURED: True,
    FG_MELLANOX_FIRMWARE_RESET: True,
})

# --- webhook configurations --------------------------------------------------------------------
OPERATOR_WEBHOOK_CONFIG_NAME: Final = "sriov-operator-webhook-config"
OPERATOR_WEBHOOK_NAME: Final = f"operator-webhook.{GROUP}"
INJECTOR_WEBHOOK_CONFIG_NAME: Final = "network-resources-injector-config"
INJECTOR_WEBHOOK_NAME: Final = "network-resources-injector-config.k8s.io"
#: ConfigMap (operator namespace) whose `config.json` switches the pod injector's features on the fly.
INJECTOR_CONTROL_SWITCHES_CONFIGMAP: Final = "nri-control-switches"
