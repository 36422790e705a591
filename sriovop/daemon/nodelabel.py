"""Labelling the node SR-IOV capable without Node Feature Discovery (opt-in).

Policies, the docs and many existing manifests select nodes on NFD's
`feature.node.kubernetes.io/network-sriov.capable=true`. Clusters without NFD have to add that label by
hand. With the feature gate `labelSriovCapableNodes` (SriovOperatorConfig `default`,
`spec.featureGates`; a sriovop extension, which upstream ignores like any unknown gate) the daemon
sets the label while discovery finds an SR-IOV capable PF on its node and removes it when none is
left. With the gate off the daemon never touches the label, so one set by NFD or an admin stays.

A `configDaemonNodeSelector` on this label cannot bootstrap itself: the daemon only runs on nodes
that already match it. Select the daemon on something else (the default worker selector) and the
policies on the label.

The Node is read on each check (one GET per pass, at most every requeue interval) and patched only
when the label is wrong, so a label removed by hand comes back at the next drift check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import structlog

from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError
from sriovop.runtime.kinds import NODE

log = structlog.get_logger(__name__)

SRIOV_CAPABLE_LABEL: Final = "feature.node.kubernetes.io/network-sriov.capable"
FG_LABEL_SRIOV_CAPABLE_NODES: Final = "labelSriovCapableNodes"


def sriov_capable(interfaces: Iterable[Mapping[str, Any]]) -> bool:
    """A discovered PF that can have VFs (`totalvfs` > 0)."""
    return any(int(iface.get("totalvfs") or 0) > 0 for iface in interfaces)


class NodeLabeler:
    def __init__(self, client: Client, node_name: str) -> None:
        self.client = client
        self.node_name = node_name
        self.patches = 0
        self._log = log.bind(node=node_name)

    def sync(self, interfaces: Iterable[Mapping[str, Any]]) -> None:
        """Make the label say whether this node has an SR-IOV capable PF.

        API errors are logged, not raised: a missing label must not stop the node's configuration.
        """
        capable = sriov_capable(interfaces)
        try:
            labels = (self.client.get(NODE, self.node_name).get("metadata") or {}).get("labels") or {}
            has = labels.get(SRIOV_CAPABLE_LABEL) == "true"
            if has == capable and (capable or SRIOV_CAPABLE_LABEL not in labels):
                return
            value = "true" if capable else None  # None deletes the key (merge patch)
            self.client.patch(NODE, self.node_name, {"metadata": {"labels": {SRIOV_CAPABLE_LABEL: value}}})
        except ApiError as exc:
            self._log.warning("could not update the SR-IOV capable node label", label=SRIOV_CAPABLE_LABEL,
                              capable=capable, error=str(exc))
            return
        self.patches += 1
        self._log.info("SR-IOV capable node label " + ("set" if capable else "removed"), label=SRIOV_CAPABLE_LABEL)
