"""What the policy rules read from the cluster, behind one small protocol.

Rules receive a `ClusterView`, never a client: the webhook plugs in a live or cached view, `sriovop
plan`, the unit tests and the benchmark an in-memory one, and the rules cannot tell the difference.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol

from sriovop.api.v1.selectors import node_selector_matches as node_selected
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.policyrules.selection_memo import SelectionMemo
from sriovop.runtime.objects import freeze

Obj = dict[str, Any]
#: Tells views apart in their version tokens (an id() can be reused once a view is gone).
VIEW_SERIALS = itertools.count()


class ClusterView(Protocol):
    def nodes(self, selector: Mapping[str, str]) -> Sequence[Obj]:
        """Nodes whose labels contain every key/value of `selector`."""

    def node_states(self) -> Sequence[Obj]:
        """SriovNetworkNodeStates in the operator namespace."""

    def node_states_by_name(self) -> Mapping[str, Obj]:
        """The same NodeStates keyed by name; a cache answers lookups without building a dict."""

    def fresh(self) -> None:
        """Return once the view reflects every write the API server committed before the call (a no-op
        for views that read live or hold a fixed snapshot). Raises TimeoutError when it cannot."""

    def policies(self) -> Sequence[Obj]:
        """SriovNetworkNodePolicies in the operator namespace."""

    def network_attachment_definition(self, namespace: str, name: str) -> Obj | None:
        """The NAD, or None when it does not exist."""

    def supported_nics(self) -> SupportedNics: ...

    def version(self) -> Hashable:
        """A token that changes whenever a Node, a NodeState or a policy may have changed; None when the
        view cannot tell, e.g. one that reads live: then nothing derived from its objects is kept
        between requests. (Memos keyed on it are dropped when it moves, so they never pin objects the
        caches have replaced.)"""


def object_labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def label_pairs(node: Mapping[str, Any]) -> list[str]:
    """A Node's labels as `key=value` strings: the index that answers a nodeSelector without a scan."""
    return [f"{k}={v}" for k, v in object_labels(node).items()]


def label_index(nodes: Sequence[Obj]) -> dict[str, list[Obj]]:
    index: dict[str, list[Obj]] = {}
    for node in nodes:
        for pair in label_pairs(node):
            index.setdefault(pair, []).append(node)
    return index


def select_indexed(selector: Mapping[str, str], by_pairs: Callable[[list[str]], Sequence[Obj]]) -> list[Obj]:
    """Nodes matching `selector`: `by_pairs` answers from a `key=value` index with (at least) the nodes
    indexed under every pair (all nodes for none), filtered by the full selector (the same decision as
    `node_selector_matches`, so an index can only speed it up)."""
    candidates = by_pairs([f"{k}={v}" for k, v in selector.items()])
    return [n for n in candidates if node_selected(selector, object_labels(n))]


class StaticClusterView:
    """A fixed snapshot: unit tests, the benchmark, and anything else that already holds the objects.

    Objects are frozen copies, as in an informer cache, so the rules may memoise work per object."""

    def __init__(
        self,
        nodes: Sequence[Obj] = (),
        node_states: Sequence[Obj] = (),
        policies: Sequence[Obj] = (),
        nads: Sequence[Obj] = (),
        nics: SupportedNics | None = None,
    ) -> None:
        self._nodes = [freeze(n) for n in nodes]
        self._by_label = label_index(self._nodes)
        self._node_states = [freeze(s) for s in node_states]
        self._states_by_name = {s["metadata"]["name"]: s for s in self._node_states}
        self._policies = [freeze(p) for p in policies]
        self._nads = {
            (n["metadata"].get("namespace", ""), n["metadata"]["name"]): n for n in nads
        }
        self._nics = nics or SupportedNics(())
        self._selections = SelectionMemo()  # the snapshot never changes: one version
        self._version = ("static", next(VIEW_SERIALS))

    def nodes(self, selector: Mapping[str, str]) -> Sequence[Obj]:
        return self._selections.select(0, selector, lambda: select_indexed(selector, lambda pairs: min(
            (self._by_label.get(pair, ()) for pair in pairs), key=len, default=self._nodes)))

    def node_states(self) -> Sequence[Obj]:
        return self._node_states

    def node_states_by_name(self) -> Mapping[str, Obj]:
        return self._states_by_name

    def fresh(self) -> None:
        return None

    def policies(self) -> Sequence[Obj]:
        return self._policies

    def network_attachment_definition(self, namespace: str, name: str) -> Obj | None:
        return self._nads.get((namespace, name))

    def supported_nics(self) -> SupportedNics:
        return self._nics

    def version(self) -> Hashable:
        return self._version  # a snapshot never changes
