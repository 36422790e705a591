"""Bad input from the user (the pod annotation, a NetworkAttachmentDefinition's config), with the path
of the field inside it, so the CNI error and the pod event can say exactly what to fix."""

from __future__ import annotations


class FieldError(ValueError):
    """`field` is a path such as `networks[0].mac` or `plugins[0].type`; `reason` says what is wrong."""

    #: what the path is relative to, for the message (`k8s.v1.cni.cncf.io/networks`); empty for none
    where = ""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{self.where}: {field}: {reason}" if self.where else f"{field}: {reason}")
        self.field = field
        self.reason = reason
