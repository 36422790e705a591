"""Network specs upstream admits but that cannot work as written.

Upstream's webhook checks only `networkNamespace` on SriovNetwork, SriovIBNetwork and OVSNetwork, so
clusters carry YAML with an empty `resourceName` or `capabilities` that is not a JSON object of
booleans. Denying those would make existing manifests fail to apply, so they are admitted with an
admission warning (the webhook) and reported on the network's Ready condition (the controller); both
read the same list from here so the two messages never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

#: Ready=False reason of a network whose NAD was rendered but whose spec cannot work as written.
REASON_NETWORK_SPEC_INVALID: Final = "NetworkSpecInvalid"


def network_spec_problems(spec: Mapping[str, Any]) -> list[str]:
    """`field: why` for each problem upstream lets through; empty when the spec is sound.

    Values that can never render (capabilities that are not JSON at all) are not listed: the webhook
    denies those, because no NetworkAttachmentDefinition could ever be made from them.
    """
    problems = []
    if not str(spec.get("resourceName") or "").strip():
        problems.append("spec.resourceName: is empty; no device-plugin resource backs this network, so pods "
                        "attaching to it get no VF")
    caps = spec.get("capabilities")
    if isinstance(caps, str) and caps.strip():
        try:
            value = json.loads(caps)
        except ValueError:
            value = None  # not JSON at all: the webhook's business, not a warning
        else:
            if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
                problems.append("spec.capabilities: should be a JSON object with boolean values, e.g. "
                                "'{\"mac\": true}'; it is passed to the CNI as written, which ignores or "
                                "rejects other values")
    return problems
