"""`sriovop wait-for-config`: the device-plugin pod's init container (blockDevicePluginUntilConfigured).

Why: the device plugin reads the node's VFs once, at start. Started before the config daemon has
configured the node it would announce VFs that are about to change (or none). So its pod starts with
this init container, which marks the pod with `sriovnetwork.openshift.io/device-plugin-wait-config` and
waits until the config daemon - once the node's configuration is applied - removes the mark:

```
PATCH own pod: annotation set  (retried: 1 s doubling to 30 s; permission/not-found errors give up)
GET own pod ─► mark gone? exit 0
            ─► watch it (field selector metadata.name) until the mark goes; a watch that fails or is
               not allowed falls back to polling every --poll-interval seconds
```
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from sriovop.api.v1 import consts
from sriovop.commands._options import kubeconfig_option, log_options
from sriovop.lazylog import lazy_logger
from sriovop.runtime.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    Invalid,
    NotFound,
    Unauthorized,
)
from sriovop.runtime.kinds import POD

if TYPE_CHECKING:
    import tenacity

log = lazy_logger(__name__)

MARK_VALUE = "true"
#: Errors that will not go away by retrying (RBAC, a wrong POD_NAME/NAMESPACE, a rejected patch).
PERMANENT_ERRORS: tuple[type[ApiError], ...] = (Forbidden, Unauthorized, NotFound, Invalid, BadRequest)
#: A permanent error is retried a few times anyway: RBAC bindings applied with the DaemonSet may take
#: a moment to reach the authorizer.
PERMANENT_ATTEMPTS = 5
STILL_WAITING_EVERY = 60.0


class WaitFailed(Exception):
    """The wait cannot succeed (own pod gone, marking refused); the message says why."""


def mark_patch() -> dict[str, Any]:
    return {"metadata": {"annotations": {consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION: MARK_VALUE}}}


def is_marked(pod: Mapping[str, Any]) -> bool:
    return consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def should_give_up(exc: BaseException | None, attempt: int) -> bool:
    """Transient errors (server down, 5xx, 429, conflicts) are retried forever; permanent ones a few times."""
    if exc is None:
        return False
    if isinstance(exc, PERMANENT_ERRORS):
        return attempt >= PERMANENT_ATTEMPTS
    return not isinstance(exc, ApiError)


@dataclass
class Waiter:
    """Marks the pod `pod_name` in `namespace` and waits for the mark to be removed."""

    client: Any  # sriovop.runtime.client.Client
    namespace: str
    pod_name: str
    node_name: str = ""
    poll_interval: float = 5.0
    retry_min_delay: float = 1.0
    retry_max_delay: float = 30.0
    timeout: float = 0.0  # 0: wait forever (an init container waits as long as the node needs)

    def __post_init__(self) -> None:
        self._log = log.bind(pod=self.pod_name, namespace=self.namespace, node=self.node_name or None)
        self._deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        self.watch_allowed = True

    def run(self) -> None:
        self.mark()
        self.wait()

    def mark(self) -> None:
        import tenacity  # here, not at the top: `wait-for-config --help` need not pay for it

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            delay = state.next_action.sleep if state.next_action is not None else 0.0
            self._log.warning("cannot mark the pod yet; retrying", attempt=state.attempt_number,
                              retry_in=round(delay, 1), error=str(exc))

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(ApiError),
            wait=tenacity.wait_exponential(multiplier=self.retry_min_delay, min=self.retry_min_delay,
                                           max=self.retry_max_delay),
            stop=lambda state: self._expired() or should_give_up(
                state.outcome.exception() if state.outcome is not None else None, state.attempt_number),
            before_sleep=before_sleep, reraise=True,
        )
        try:
            pod = retrying(lambda: self.client.patch(POD, self.pod_name, mark_patch(), self.namespace))
        except ApiError as exc:
            raise WaitFailed(f"cannot annotate pod {self.namespace}/{self.pod_name} with the wait mark: "
                             f"{exc}{_hint(exc)}") from exc
        node = (pod.get("spec") or {}).get("nodeName")
        if self.node_name and node and node != self.node_name:
            self._log.warning("the pod runs on another node than NODE_NAME says", pod_node=node)
        self._log.info("pod marked; waiting for the config daemon to configure the node and remove the mark",
                       annotation=consts.DEVICE_PLUGIN_WAIT_CONFIG_ANNOTATION)

    def wait(self) -> None:
        started = last_note = time.monotonic()
        while True:
            if self._expired():
                raise WaitFailed(f"the mark was not removed within {self.timeout:g}s")
            try:
                pod = self.client.get(POD, self.pod_name, self.namespace)
            except NotFound as exc:
                raise WaitFailed(f"pod {self.namespace}/{self.pod_name} no longer exists") from exc
            except ApiError as exc:
                self._log.warning("cannot read the pod; retrying", error=str(exc), retry_in=self.poll_interval)
                time.sleep(self.poll_interval)
                continue
            if not is_marked(pod):
                self._log.info("mark removed: the node is configured; the device plugin may start",
                               waited=round(time.monotonic() - started, 1))
                return
            if time.monotonic() - last_note >= STILL_WAITING_EVERY:
                last_note = time.monotonic()
                self._log.info("still waiting for the config daemon", waited=round(last_note - started))
            if self.watch_allowed and self._watch_until_unmarked(pod):
                continue  # re-read: the next GET confirms and logs
            time.sleep(self.poll_interval)

    def _watch_until_unmarked(self, pod: Mapping[str, Any]) -> bool:
        """True when the watch saw the mark go (or the pod go); False to fall back to one poll interval."""
        rv = str(pod["metadata"].get("resourceVersion") or "")
        remaining = self._remaining()
        timeout = int(min(300.0, remaining)) if remaining is not None else 300
        if timeout < 1:
            return False
        try:
            stream = self.client.watch(POD, self.namespace, resource_version=rv, timeout_seconds=timeout,
                                       field_selector={"metadata.name": self.pod_name})
            try:
                for etype, obj in stream:
                    if etype == "BOOKMARK":
                        continue
                    if etype == "DELETED" or not is_marked(obj):
                        return True
            finally:
                stream.close()
        except Forbidden as exc:
            self._log.warning("not allowed to watch the pod; polling instead", error=str(exc),
                              every=self.poll_interval)
            self.watch_allowed = False
            return False
        except ApiError as exc:
            self._log.info("watch ended; polling once before watching again", error=str(exc))
            return False
        return True  # the server closed the watch (timeoutSeconds): re-read and watch again

    def _remaining(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def _expired(self) -> bool:
        remaining = self._remaining()
        return remaining is not None and remaining <= 0


def _hint(exc: ApiError) -> str:
    if isinstance(exc, (Forbidden, Unauthorized)):
        return (" (the pod's ServiceAccount needs get/patch/watch on pods in its namespace: "
                "manifests/rbac/device-plugin.yaml)")
    if isinstance(exc, NotFound):
        return " (POD_NAME and NAMESPACE must name this pod: set them from metadata.name/metadata.namespace)"
    return ""


def _positive(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value <= 0:
        raise click.BadParameter(f"{value!r}: must be greater than zero (seconds)", ctx, param)
    return float(value)


@click.command()
@click.option("--pod-name", envvar="POD_NAME", default=None,
              help="This pod's name (required; default $POD_NAME, from metadata.name).")
@click.option("--namespace", envvar="NAMESPACE", default=None,
              help="This pod's namespace (required; default $NAMESPACE, from metadata.namespace).")
@click.option("--node-name", envvar="NODE_NAME", default="",
              help="This node's name, for the logs (default $NODE_NAME, from spec.nodeName).")
@kubeconfig_option
@click.option("--poll-interval", type=float, default=5.0, show_default=True, callback=_positive,
              help="Seconds between reads when the pod cannot be watched.")
@click.option("--retry-max-delay", type=float, default=30.0, show_default=True, callback=_positive,
              help="Longest delay between attempts to mark the pod (the first is 1 s, doubling).")
@click.option("--timeout", type=float, default=0.0, show_default=True,
              help="Give up (exit 1) after this many seconds; 0 waits for as long as it takes.")
@log_options()
def command(pod_name: str | None, namespace: str | None, node_name: str, kubeconfig: str | None,
            poll_interval: float, retry_max_delay: float, timeout: float, log_level: str, log_format: str) -> None:
    """Block the device plugin until the config daemon has configured this node.

    Marks this pod with the annotation sriovnetwork.openshift.io/device-plugin-wait-config and exits 0
    once the config daemon has removed it. Environment: POD_NAME, NAMESPACE, NODE_NAME, KUBECONFIG.
    """
    from sriovop.logsetup import configure_logging
    from sriovop.runtime.client import Client
    from sriovop.runtime.config import ConfigError, load_config

    configure_logging(log_level, "console" if log_format == "console" else "json")
    if not pod_name:
        raise click.UsageError("pod name: required (--pod-name or $POD_NAME, set from metadata.name)")
    if not namespace:
        raise click.UsageError("namespace: required (--namespace or $NAMESPACE, set from metadata.namespace)")
    if timeout < 0:
        raise click.BadParameter(f"{timeout!r}: must be 0 (no limit) or more seconds", param_hint="--timeout")
    try:
        rest = load_config(kubeconfig)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    client = Client(rest)
    waiter = Waiter(client, namespace, pod_name, node_name=node_name, poll_interval=poll_interval,
                    retry_max_delay=retry_max_delay, timeout=timeout)
    log.info("waiting for the node's SR-IOV configuration", pod=pod_name, namespace=namespace,
             node=node_name or None, api=rest.source)
    try:
        waiter.run()
    except WaitFailed as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        client.close()
