"""NetworkAttachmentDefinition (k8s.cni.cncf.io/v1), the Multus object our network CRs render."""

from typing import Annotated, TypedDict

from sriovop.api.v1.schema.markers import Doc


class NetworkAttachmentDefinitionSpec(TypedDict, total=False):
    """NetworkAttachmentDefinition spec defines the desired state of a network attachment."""

    config: Annotated[str, Doc("NetworkAttachmentDefinition config is a JSON-formatted CNI configuration")]
