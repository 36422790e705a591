"""The device-plugin pod on this node: restart it around an apply and unblock its init container.

Why: the device plugin lists VFs once at start. With `blockDevicePluginUntilConfigured` (reference 2.4,
3.3 steps 11.1/11.5) its pod's init container (`sriovop wait-for-config`) marks the pod with
`sriovnetwork.openshift.io/device-plugin-wait-config` and waits until the config daemon removes the mark,
so the plugin never announces VFs that are about to change:

```
apply:  delete the pod(s) on this node ─► wait ≤2 min for a replacement (new UID)
        ─► configure the host ─► wait ≤2 min for the replacement to carry the mark ─► remove it
gate off: configure the host ─► delete the pod(s) (the plugin restarts and sees the new VFs)
steady state: a marked pod on a configured node (it restarted on its own) ─► remove the mark
```
The pods are found by label `app=sriov-device-plugin` and field `spec.nodeName=<node>` in the operator
namespace: listed live around an apply, and at rest read from an informer with the same selectors (the
daemon's periodic pass then makes no request for them).
Nothing here may stop the node being configured: no pod (the DaemonSet is not scheduled here, or a
demo without one), a replacement that never comes, or an API error are logged and the pass goes on;
the steady state retries the unblocking on every drift check.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from sriovop.api.v1 import consts
from sriovop.render.workloads import WAIT_FOR_CONFIG_COMMAND
from sriovop.runtime.client import Selector
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import POD, Kind

log = structlog.get_logger(__name__)

#: Upstream's bound on both waits (replacement pod, its wait mark).
DEFAULT_WAIT_TIMEOUT = 120.0
DEFAULT_POLL_INTERVAL = 1.0
WAIT_ANNOTATION = consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION
#: The init container's subcommand, as the operator renders it.
WAIT_FOR_CONFIG_SUBCOMMAND = WAIT_FOR_CONFIG_COMMAND[-1]
POD_LABELS = {consts.DEVICE_PLUGIN_APP_LABEL: consts.DEVICE_PLUGIN_APP_LABEL_VALUE}


class PodClient(Protocol):
    """The calls used here; sriovop.runtime.client.Client has them."""

    def list(self, kind: Kind, namespace: str | None = None, label_selector: Selector = None,
             field_selector: Selector = None) -> list[Any]: ...

    def delete(self, kind: Kind, name: str, namespace: str | None = None, *,
               preconditions: Mapping[str, str] | None = None) -> Any: ...

    def patch(self, kind: Kind, name: str, patch: Any, namespace: str | None = None) -> Any: ...


# -- pure parts ------------------------------------------------------------------------------------

def uid_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def name_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_waiting(pod: Mapping[str, Any]) -> bool:
    """The init container has marked the pod and waits for the mark to go."""
    return WAIT_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def expects_mark(pod: Mapping[str, Any]) -> bool:
    """The pod has the init container that marks it (a DaemonSet rendered while the gate was off has
    none: waiting for its mark would stall the daemon for the whole wait)."""
    for container in (pod.get("spec") or {}).get("initContainers") or []:
        words = [*(container.get("command") or []), *(container.get("args") or [])]
        if WAIT_FOR_CONFIG_SUBCOMMAND in words:
            return True
    return False


def live(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods not being deleted: a terminating pod is neither a replacement nor worth unblocking."""
    return [p for p in pods if not is_terminating(p)]


def replacements(pods: Iterable[Mapping[str, Any]], old_uids: Iterable[str]) -> list[Mapping[str, Any]]:
    """Live pods that are not one of the deleted ones (by UID: the DaemonSet may reuse nothing, but a
    pod that has not gone yet keeps its UID)."""
    old = set(old_uids)
    return [p for p in live(pods) if uid_of(p) not in old]


def unblock_patch() -> dict[str, Any]:
    """A merge patch removing the mark (null deletes a key in RFC 7386)."""
    return {"metadata": {"annotations": {WAIT_ANNOTATION: None}}}


@dataclass
class Restart:
    """What step 11.1 did: which pods it deleted and which replacement it saw (if any)."""

    deleted: list[str] = field(default_factory=list)
    replacement: str | None = None

    @property
    def had_pods(self) -> bool:
        return bool(self.deleted)


# -- the API side ----------------------------------------------------------------------------------

class DevicePluginPods:
    """The device-plugin pods of one node. Every method swallows API errors after logging them."""

    def __init__(self, client: PodClient, namespace: str, node_name: str, *,
                 timeout: float = DEFAULT_WAIT_TIMEOUT, interval: float = DEFAULT_POLL_INTERVAL,
                 stop: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 cached: Callable[[], list[Any] | None] | None = None) -> None:
        if timeout <= 0 or interval <= 0:
            raise ValueError(f"device-plugin wait: timeout and interval must be > 0, got {timeout}, {interval}")
        self.client = client
        self.namespace = namespace
        self.node_name = node_name
        self.timeout = timeout
        self.interval = interval
        self.stop = stop or threading.Event()
        self.clock = clock
        #: This node's device-plugin pods from an informer (None until it has synced).
        self.cached = cached
        self._log = log.bind(node=node_name, namespace=namespace)

    def pods(self) -> list[dict[str, Any]]:
        return self.client.list(POD, self.namespace, label_selector=POD_LABELS,
                                field_selector={"spec.nodeName": self.node_name})

    # step 11.1 (gate on) and the gate-off restart after apply
    def restart(self, *, wait: bool = True) -> Restart:
        """Delete this node's device-plugin pods; with `wait`, wait for a replacement with a new UID."""
        done = Restart()
        try:
            pods = live(self.pods())
        except ApiError as exc:
            self._log.warning("cannot list the device-plugin pods; not restarting the device plugin",
                              error=str(exc))
            return done
        if not pods:
            self._log.info("no device-plugin pod on this node; nothing to restart")
            return done
        for pod in pods:
            try:
                self.client.delete(POD, name_of(pod), self.namespace, preconditions={"uid": uid_of(pod)})
            except NotFound:
                pass
            except ApiError as exc:
                self._log.warning("cannot delete the device-plugin pod", pod=name_of(pod), error=str(exc))
                continue
            done.deleted.append(uid_of(pod))
            self._log.info("deleted the device-plugin pod", pod=name_of(pod), uid=uid_of(pod))
        if wait and done.deleted:
            new = self._wait_for(lambda ps: replacements(ps, done.deleted), "a replacement device-plugin pod")
            if new:
                done.replacement = uid_of(new[0])
                self._log.info("device-plugin pod replaced", pod=name_of(new[0]), uid=done.replacement)
        return done

    # step 11.5 (gate on)
    def wait_and_unblock(self, restart: Restart) -> bool:
        """After a successful apply: wait for the replacement to carry the mark, then remove it."""
        if not restart.had_pods:
            return self.unblock_waiting() > 0
        def marked_or_none_expected(pods: list[dict[str, Any]]) -> list[Mapping[str, Any]] | None:
            new = replacements(pods, restart.deleted)
            waiting = [p for p in new if is_waiting(p)]
            if waiting:
                return waiting
            if new and not any(expects_mark(p) for p in new):
                self._log.info("the device-plugin pod has no wait-for-config init container; not waiting "
                               "for its mark", pod=name_of(new[0]))
                return None
            return []

        marked = self._wait_for(marked_or_none_expected, "the device-plugin pod's wait-for-config mark")
        return bool(marked) and sum(self._unblock(p) for p in marked) > 0

    # steady state ("optionally unblock the device plugin")
    def unblock_waiting(self) -> int:
        """Remove the mark from every live pod of this node carrying it; returns how many."""
        try:
            cached = self.cached() if self.cached is not None else None
            pods = [p for p in live(self.pods() if cached is None else cached) if is_waiting(p)]
        except ApiError as exc:
            self._log.warning("cannot list the device-plugin pods to unblock them", error=str(exc))
            return 0
        return sum(self._unblock(p) for p in pods)

    def _unblock(self, pod: Mapping[str, Any]) -> int:
        """Merge patch without a resourceVersion: removing a mark that is already gone changes nothing."""
        try:
            self.client.patch(POD, name_of(pod), unblock_patch(), self.namespace)
        except NotFound:
            return 0
        except ApiError as exc:
            self._log.warning("cannot remove the wait-for-config mark", pod=name_of(pod), error=str(exc))
            return 0
        self._log.info("device plugin unblocked", pod=name_of(pod), uid=uid_of(pod))
        return 1

    def _wait_for(self, select: Callable[[list[dict[str, Any]]], list[Mapping[str, Any]] | None],
                  what: str) -> list[Mapping[str, Any]]:
        """Poll until `select` finds pods; it returns None when there is nothing worth waiting for."""
        deadline = self.clock() + self.timeout
        while True:
            try:
                found = select(self.pods())
            except ApiError as exc:
                self._log.warning("listing the device-plugin pods failed; retrying", error=str(exc))
                found = []
            if found is None:
                return []
            if found:
                return found
            if self.clock() >= deadline:
                self._log.warning(f"no {what} within the wait; continuing", timeout=self.timeout)
                return []
            if self.stop.wait(self.interval):
                self._log.info(f"stopping while waiting for {what}")
                return []
