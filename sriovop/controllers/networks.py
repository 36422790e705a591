"""SriovNetwork, SriovIBNetwork and OVSNetwork → NetworkAttachmentDefinition (one generic reconciler).

Wiring (the cluster-wide manager; one instance per kind):

    for kind in NETWORK_KINDS:
        NetworkReconciler(kind, mgr.client, mgr.client, namespace, resource_prefix, recorder).setup(mgr)

`setup` registers the `spec.networkNamespace` field index on the kind (tolerating an index the process
already registered), builds a Controller named after the kind (`sriovnetwork`, `sriovibnetwork`,
`ovsnetwork`) watching the CR, NADs (mapped back to their CR) and Namespace creations (mapped through
the index to every network waiting for that namespace), adds it to the manager and returns it.

Behaviour (upstream's generic network controller, HEAD):
- a network outside the operator namespace may not set `networkNamespace` (Ready=False,
  NetworkAttachmentDefinitionInvalid);
- the `netattdef` finalizer is added only to networks in the operator namespace; their NADs can live
  elsewhere, where an ownerReference cannot reach. A NAD in the network's own namespace gets a
  controller ownerReference instead;
- on deletion the NAD is deleted (NotFound ignored), then the finalizer removed;
- the NAD follows `networkNamespace`: the annotation `last-network-namespace` on the CR remembers where
  it was created, and a move deletes the old one;
- a missing target namespace gives Ready=False NamespaceNotFound and no requeue: the namespace's
  creation requeues the network;
- an existing NAD whose owner-ref annotation names another object is never touched (Ready=False);
- Ready=True NetworkReady once the NAD matches, exactly where upstream says so. A spec upstream admits
  and renders but that cannot work as written (empty resourceName, capabilities that are not an object
  of booleans, an ipam without a type, ...) gets its NAD and Ready=True like upstream, plus a separate
  `SpecWarning` condition (status True, reason NetworkSpecInvalid, the message naming each field), so
  `kubectl wait --for condition=Ready` behaves as upstream while the problem stays visible. The
  condition is removed once the spec is sound. Conditions go through server-side apply; transitions are
  recorded as Events;
- a spec whose values cannot be rendered correctly (`sriovop.api.v1.unrenderable`: raw JSON that does
  not parse, a quote in `logFile`, ...) gets no NAD: Ready=False NetworkAttachmentDefinitionInvalid with a
  message naming the field, and the same text on SpecWarning. Upstream's reconcile errors out there before
  touching any NAD, so a NAD rendered from an earlier, sound spec is left as it is (a pending
  `networkNamespace` move waits too) until the spec renders again.
Improvements: the old NAD is deleted on a move only if it is ours (upstream deletes whatever has that
name); an unrenderable spec is reported on Ready instead of retried forever with no condition, and a
spec whose pasted values would render keys the user never wrote (upstream renders those) is not
rendered either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import NETWORK_ATTACHMENT_DEFINITION as NAD
from sriovop.api.v1.networkproblems import (
    CONDITION_SPEC_WARNING,
    REASON_NETWORK_SPEC_INVALID,
    network_spec_problems,
)
from sriovop.controllers.ready_condition import ConditionSpec, Recorder, set_conditions
from sriovop.render.nad import RenderError, owner_ref_annotation, render_nad, target_namespace
from sriovop.runtime.controller import Controller, Funcs, Request, ResourceVersionChanged, Result
from sriovop.runtime.errors import Conflict, NotFound
from sriovop.runtime.kinds import NAMESPACE, Kind

log = structlog.get_logger(__name__)

NETWORK_NAMESPACE_FIELD = "spec.networkNamespace"
#: A cache-only index of NADs by their owner-ref annotation (finds a deleted network's NAD in O(1)).
NAD_OWNER_FIELD = f"metadata.annotations.{consts.OWNER_REF_ANNOTATION}"


def network_namespace_of(obj: Mapping[str, Any]) -> str | None:
    """The field-index extractor for `spec.networkNamespace` (None when unset: not indexed)."""
    return (obj.get("spec") or {}).get("networkNamespace") or None


def register_network_namespace_index(manager: Any, kind: Kind) -> None:
    """Index `kind` by `spec.networkNamespace` unless the process already did."""
    try:
        manager.index_field(kind, NETWORK_NAMESPACE_FIELD, network_namespace_of)
    except ValueError as exc:
        if "already indexed" not in str(exc):
            raise


def nad_owner_of(obj: Mapping[str, Any]) -> str | None:
    """The field-index extractor for NAD_OWNER_FIELD (None when the NAD names no owner)."""
    return (obj["metadata"].get("annotations") or {}).get(consts.OWNER_REF_ANNOTATION) or None


def register_nad_owner_index(manager: Any) -> None:
    """Index NADs by owner annotation unless another network controller already did."""
    try:
        manager.index_field(NAD, NAD_OWNER_FIELD, nad_owner_of)
    except ValueError as exc:
        if "already indexed" not in str(exc):
            raise


class NetworkReconciler:
    def __init__(self, kind: Kind, client: Any, reader: Any, namespace: str, resource_prefix: str,
                 recorder: Recorder | None = None, api_reader: Any = None) -> None:
        """`client` writes (create/update/patch/delete); `reader` reads (a cached reader in the
        operator; it must answer `list(kind, field_selector={"spec.networkNamespace": ns})`);
        `api_reader` (default `client`) confirms on the server that a network is gone before its
        orphaned NAD is deleted."""
        if not resource_prefix:
            raise ValueError("resource_prefix: RESOURCE_PREFIX must not be empty")
        self.kind = kind
        self.client = client
        self.reader = reader
        self.namespace = namespace
        self.resource_prefix = resource_prefix
        self.recorder = recorder
        self.api_reader = api_reader if api_reader is not None else client
        self._nad_owner_indexed = False
        self.name = kind.kind.lower()
        self._log = log.bind(controller=self.name)

    # -- wiring ----------------------------------------------------------------------------------

    def setup(self, manager: Any, *, workers: int = 1) -> Controller:
        register_network_namespace_index(manager, self.kind)
        register_nad_owner_index(manager)
        self._nad_owner_indexed = True
        ctrl = Controller(self.name, self.reconcile, workers=workers, registry=manager.registry)
        cache = manager.cache
        ctrl.watches(cache.informers_for(self.kind), predicates=[ResourceVersionChanged()])
        ctrl.watches(cache.informers_for(NAD), map_func=self.map_nad, predicates=[ResourceVersionChanged()])
        ctrl.watches(cache.informers_for(NAMESPACE), map_func=self.map_namespace,
                     predicates=[Funcs(on_update=lambda old, new: False, on_delete=lambda obj: False)])
        manager.add(ctrl)
        return ctrl

    def map_nad(self, nad: Mapping[str, Any]) -> Iterable[Request]:
        """A NAD event concerns the CR of the same name in its namespace and in the operator namespace,
        and the CR its owner-ref annotation names (a network elsewhere whose NAD lives here)."""
        meta = nad["metadata"]
        name = meta["name"]
        out = {Request(meta.get("namespace") or "", name), Request(self.namespace, name)}
        owner = (meta.get("annotations") or {}).get(consts.OWNER_REF_ANNOTATION) or ""
        prefix = f"{self.kind.kind}.{self.kind.group}/"
        if owner.startswith(prefix):
            ns, _, owner_name = owner[len(prefix):].partition("/")
            if ns and owner_name:
                out.add(Request(ns, owner_name))
        return out

    def map_namespace(self, namespace: Mapping[str, Any]) -> Iterable[Request]:
        """A namespace was created: every network waiting for it, found through the field index."""
        ns = namespace["metadata"]["name"]
        waiting = self.reader.list(self.kind, field_selector={NETWORK_NAMESPACE_FIELD: ns})
        return [Request.for_object(obj) for obj in waiting]

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, req: Request) -> Result | None:
        try:
            network = self.reader.get(self.kind, req.name, req.namespace)
        except NotFound:
            self._delete_orphaned_nads(req)
            return None
        meta = network["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            if consts.NETATTDEF_FINALIZER in finalizers:
                self._delete_nad(network, target_namespace(network))
                last = (meta.get("annotations") or {}).get(consts.LAST_NETWORK_NAMESPACE_ANNOTATION)
                if last and last != target_namespace(network):  # a move that had not completed
                    self._delete_nad(network, last)
                self._set_finalizers(network, [f for f in finalizers if f != consts.NETATTDEF_FINALIZER])
            return None
        in_operator_ns = meta.get("namespace") == self.namespace
        if network_namespace_of(network) and not in_operator_ns:
            self._ready(network, False, consts.REASON_NAD_INVALID,
                        f"spec.networkNamespace can only be set on {self.kind.kind}s in the operator "
                        f"namespace {self.namespace!r}; this one is in {meta.get('namespace')!r}")
            return None
        if in_operator_ns and consts.NETATTDEF_FINALIZER not in finalizers:
            network = self._set_finalizers(network, [*finalizers, consts.NETATTDEF_FINALIZER])
        try:
            desired = render_nad(self.kind, network, self.resource_prefix)
        except RenderError as exc:
            self._ready(network, False, consts.REASON_NAD_INVALID, str(exc))
            return None
        target = desired["metadata"]["namespace"]
        network = self._forget_old_namespace(network, target)
        try:
            current = self.reader.get(NAD, desired["metadata"]["name"], target)
        except NotFound:
            return self._create(network, desired)
        return self._update(network, current, desired)

    # -- steps -----------------------------------------------------------------------------------

    def _ours(self, network: Mapping[str, Any]) -> str:
        return owner_ref_annotation(self.kind, network)

    def _owner_of(self, nad: Mapping[str, Any]) -> str:
        return str((nad["metadata"].get("annotations") or {}).get(consts.OWNER_REF_ANNOTATION) or "")

    def _delete_nad(self, network: Mapping[str, Any], namespace: str) -> None:
        """Delete the NAD of this network in `namespace`, unless another object owns it."""
        name = network["metadata"]["name"]
        try:
            nad = self.client.get(NAD, name, namespace)
        except NotFound:
            return
        if self._owner_of(nad) not in ("", self._ours(network)):
            self._log.info("not deleting a NAD owned by another object", nad=f"{namespace}/{name}",
                           owner=self._owner_of(nad))
            return
        try:
            self.client.delete(NAD, name, namespace)
            self._log.info("deleted NetworkAttachmentDefinition", nad=f"{namespace}/{name}")
        except NotFound:
            pass

    def _delete_orphaned_nads(self, req: Request) -> None:
        """A network deleted while it had no finalizer (none is added outside the operator namespace,
        and the operator's shutdown removes it) is gone before we could delete its NAD. The NAD's
        owner annotation still names it: delete such NADs once the server confirms the network is gone
        (the cache may just not have seen its creation yet)."""
        owner = self._ours({"metadata": {"namespace": req.namespace, "name": req.name}})
        candidates = (self.reader.list(NAD, field_selector={NAD_OWNER_FIELD: owner}) if self._nad_owner_indexed
                      else self.reader.list(NAD))
        orphans = [nad for nad in candidates
                   if nad["metadata"]["name"] == req.name and self._owner_of(nad) == owner]
        if not orphans:
            return
        try:
            self.api_reader.get(self.kind, req.name, req.namespace)
            return
        except NotFound:
            pass
        for nad in orphans:
            ns, name = nad["metadata"].get("namespace") or "", nad["metadata"]["name"]
            try:
                self.client.delete(NAD, name, ns)
                self._log.info("deleted the NetworkAttachmentDefinition of a deleted network", nad=f"{ns}/{name}",
                               owner=owner)
            except NotFound:
                pass

    def _set_finalizers(self, network: Mapping[str, Any], finalizers: list[str]) -> Mapping[str, Any]:
        meta = network["metadata"]
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
        result: Mapping[str, Any] = self.client.patch(self.kind, meta["name"], patch, meta.get("namespace"))
        return result

    def _annotate(self, network: Mapping[str, Any], value: str | None) -> Mapping[str, Any]:
        meta = network["metadata"]
        patch = {"metadata": {"annotations": {consts.LAST_NETWORK_NAMESPACE_ANNOTATION: value}}}
        result: Mapping[str, Any] = self.client.patch(self.kind, meta["name"], patch, meta.get("namespace"))
        return result

    def _forget_old_namespace(self, network: Mapping[str, Any], target: str) -> Mapping[str, Any]:
        last = (network["metadata"].get("annotations") or {}).get(consts.LAST_NETWORK_NAMESPACE_ANNOTATION)
        if not last or last == target:
            return network
        self._delete_nad(network, last)
        self._log.info("networkNamespace changed; old NAD removed", network=network["metadata"]["name"],
                       old=last, new=target)
        return self._annotate(network, None)

    def _create(self, network: Mapping[str, Any], desired: dict[str, Any]) -> Result | None:
        target = desired["metadata"]["namespace"]
        try:
            self.reader.get(NAMESPACE, target)
        except NotFound:
            self._ready(network, False, consts.REASON_NAMESPACE_NOT_FOUND,
                        f"namespace {target!r} does not exist; the NetworkAttachmentDefinition will be "
                        "created when it does")
            return None
        try:
            self.client.create(NAD, desired, target)
        except Conflict as exc:
            if not exc.already_exists:
                raise
            # Our cache had not seen it yet: compare against the server's copy.
            return self._update(network, self.client.get(NAD, desired["metadata"]["name"], target), desired)
        self._log.info("created NetworkAttachmentDefinition", nad=f"{target}/{desired['metadata']['name']}")
        annotations = network["metadata"].get("annotations") or {}
        if annotations.get(consts.LAST_NETWORK_NAMESPACE_ANNOTATION) != target:
            network = self._annotate(network, target)
        self._provisioned(network)
        return None

    def _update(self, network: Mapping[str, Any], current: Mapping[str, Any],
                desired: dict[str, Any]) -> Result | None:
        owner = self._owner_of(current)
        meta = current["metadata"]
        if owner and owner != self._ours(network):
            self._ready(network, False, consts.REASON_NAD_INVALID,
                        f"NetworkAttachmentDefinition {meta.get('namespace')}/{meta['name']} already exists "
                        f"and is owned by {owner}")
            return None
        want_refs = desired["metadata"].get("ownerReferences")
        if (current.get("spec") != desired["spec"]
                or (meta.get("annotations") or {}) != desired["metadata"]["annotations"]
                or (want_refs is not None and meta.get("ownerReferences") != want_refs)):
            body = dict(desired)
            body["metadata"] = {**desired["metadata"], "resourceVersion": meta.get("resourceVersion")}
            if want_refs is None and meta.get("ownerReferences"):
                body["metadata"]["ownerReferences"] = meta["ownerReferences"]
            self.client.update(NAD, body)
            self._log.info("updated NetworkAttachmentDefinition", nad=f"{meta.get('namespace')}/{meta['name']}")
        annotations = network["metadata"].get("annotations") or {}
        if annotations.get(consts.LAST_NETWORK_NAMESPACE_ANNOTATION) != meta.get("namespace"):
            network = self._annotate(network, meta.get("namespace"))
        self._provisioned(network)
        return None

    def _provisioned(self, network: Mapping[str, Any]) -> None:
        """Ready=True as upstream; what upstream lets through goes on the SpecWarning condition (`_ready`)."""
        self._ready(network, True, consts.REASON_NETWORK_READY, "NetworkAttachmentDefinition is provisioned and ready")

    def _ready(self, network: Mapping[str, Any], ready: bool, reason: str, message: str) -> None:
        """Write Ready and, beside it, SpecWarning while the spec has a problem upstream admits (removed by
        the same apply once it has none): every write carries both, so neither drops the other."""
        conditions = [ConditionSpec(consts.CONDITION_READY, "True" if ready else "False", reason, message)]
        problems = network_spec_problems(network.get("spec") or {}, self.kind.kind)
        if problems:
            conditions.append(ConditionSpec(CONDITION_SPEC_WARNING, "True", REASON_NETWORK_SPEC_INVALID,
                                            "; ".join(problems)))
        try:
            set_conditions(self.client, self.recorder, self.kind, network, conditions,
                           absent=() if problems else (CONDITION_SPEC_WARNING,))
        except NotFound:
            pass  # deleted meanwhile; nothing to report on
