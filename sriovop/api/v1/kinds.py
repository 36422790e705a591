"""The resource types of sriovnetwork.openshift.io/v1 (and the NAD type they render), for the runtime client.

Kept apart from the schemas so that importing a kind costs nothing: the operator, daemon and webhook
address these types on every request.
"""

from __future__ import annotations

from sriovop.runtime.kinds import Kind

GROUP = "sriovnetwork.openshift.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

NAD_GROUP = "k8s.cni.cncf.io"
NAD_VERSION = "v1"

SRIOV_NETWORK_NODE_POLICY = Kind(GROUP, VERSION, "SriovNetworkNodePolicy", "sriovnetworknodepolicies")
SRIOV_NETWORK = Kind(GROUP, VERSION, "SriovNetwork", "sriovnetworks")
SRIOV_IB_NETWORK = Kind(GROUP, VERSION, "SriovIBNetwork", "sriovibnetworks")
OVS_NETWORK = Kind(GROUP, VERSION, "OVSNetwork", "ovsnetworks")
SRIOV_NETWORK_NODE_STATE = Kind(GROUP, VERSION, "SriovNetworkNodeState", "sriovnetworknodestates")
SRIOV_OPERATOR_CONFIG = Kind(GROUP, VERSION, "SriovOperatorConfig", "sriovoperatorconfigs")
SRIOV_NETWORK_POOL_CONFIG = Kind(GROUP, VERSION, "SriovNetworkPoolConfig", "sriovnetworkpoolconfigs")

NETWORK_ATTACHMENT_DEFINITION = Kind(
    NAD_GROUP, NAD_VERSION, "NetworkAttachmentDefinition", "network-attachment-definitions"
)

#: The seven kinds this operator serves, in the order the CRDs are generated and documented.
SRIOV_KINDS: tuple[Kind, ...] = (
    SRIOV_NETWORK_NODE_POLICY,
    SRIOV_NETWORK,
    SRIOV_IB_NETWORK,
    OVS_NETWORK,
    SRIOV_NETWORK_NODE_STATE,
    SRIOV_OPERATOR_CONFIG,
    SRIOV_NETWORK_POOL_CONFIG,
)

#: The three network kinds that render a NetworkAttachmentDefinition (one generic reconciler).
NETWORK_KINDS: tuple[Kind, ...] = (SRIOV_NETWORK, SRIOV_IB_NETWORK, OVS_NETWORK)

_BY_NAME: dict[str, Kind] = {k.kind: k for k in (*SRIOV_KINDS, NETWORK_ATTACHMENT_DEFINITION)}


def kind_by_name(kind: str) -> Kind:
    """The Kind whose `kind` field is `kind` (e.g. from an AdmissionReview's `request.kind.kind`)."""
    try:
        return _BY_NAME[kind]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r}; known: {sorted(_BY_NAME)}") from None
