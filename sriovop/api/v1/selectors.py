"""Node selection: a policy's plain `nodeSelector` map, and a pool's metav1.LabelSelector.

Policies use plain equality (every key present with that value; an empty map selects every node).
Pool configs use a full LabelSelector; a nil selector means "every node" there (upstream pool lookup).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class LabelSelectorError(ValueError):
    """An invalid LabelSelector (unknown operator, values where none are allowed, ...)."""


def node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def node_selector_matches(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """Plain map selector: every key/value must be present in `labels`; empty/None selects everything."""
    if not selector:
        return True
    return all(key in labels and labels[key] == value for key, value in selector.items())


def policy_selects_node(policy: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether a SriovNetworkNodePolicy's `spec.nodeSelector` selects a Node (dicts as from the API)."""
    return node_selector_matches((policy.get("spec") or {}).get("nodeSelector"), node_labels(node))


def _requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str], index: int) -> bool:
    key = req.get("key")
    op = req.get("operator")
    values = req.get("values") or []
    where = f"matchExpressions[{index}]"
    if not key:
        raise LabelSelectorError(f"{where}.key: Required value")
    if op in ("In", "NotIn"):
        if not values:
            raise LabelSelectorError(f"{where}.values: must be specified when `operator` is 'In' or 'NotIn'")
        present = key in labels and labels[key] in values
        return present if op == "In" else not present
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise LabelSelectorError(
                f"{where}.values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        return (key in labels) == (op == "Exists")
    raise LabelSelectorError(
        f"{where}.operator: Unsupported value: {op!r}: supported values: In, NotIn, Exists, DoesNotExist"
    )


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; None or `{}` match everything. Raises LabelSelectorError if invalid."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels or labels[key] != value:
            return False
    return all(
        _requirement_matches(req, labels, i) for i, req in enumerate(selector.get("matchExpressions") or ())
    )
