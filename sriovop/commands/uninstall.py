"""`sriovop uninstall`: remove what the operator deployed, while the operator can still do it.

Why: the operator's admission configurations are cluster-scoped (no ownerReference can remove them)
and the `default` SriovOperatorConfig carries the operator's finalizer, which deletes them. If the
operator and its RBAC go first (`helm uninstall` deletes every object at once, custom resources last)
the finalizer is never removed: `default` and its namespace hang in deletion and the webhook
configurations stay behind. The chart runs this command as a pre-delete hook Job:

```
DELETE sriovoperatorconfigs/default (absent: done)
GET it every --poll-interval seconds until it is gone (the operator removed the webhook
configurations, then its finalizer), or fail after --timeout naming what is left
```
"""

from __future__ import annotations

import time

import click

from sriovop.api.v1 import consts
from sriovop.api.v1.kinds import SRIOV_OPERATOR_CONFIG
from sriovop.commands._options import kubeconfig_option, log_options
from sriovop.lazylog import lazy_logger

log = lazy_logger(__name__)


@click.command()
@kubeconfig_option
@click.option("--namespace", envvar="NAMESPACE", required=True, help="Operator namespace (env NAMESPACE).")
@click.option("--timeout", type=click.FloatRange(1, 3600), default=240.0, show_default=True,
              help="Seconds to wait for the operator to finish the config's deletion.")
@click.option("--poll-interval", type=click.FloatRange(0.1, 60), default=1.0, show_default=True,
              help="Seconds between checks.")
@log_options()
def command(kubeconfig: str | None, namespace: str, timeout: float, poll_interval: float, log_level: str,
            log_format: str) -> None:
    """Delete the `default` SriovOperatorConfig and wait until the running operator has removed its
    webhook configurations and finalizer (Helm's pre-delete hook runs this)."""
    from sriovop.logsetup import configure_logging
    from sriovop.runtime.client import Client
    from sriovop.runtime.config import ConfigError, load_config
    from sriovop.runtime.errors import ApiError, NotFound

    configure_logging(log_level, "console" if log_format == "console" else "json")
    try:
        client = Client(load_config(kubeconfig))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    name = consts.DEFAULT_CONFIG_NAME
    try:
        client.delete(SRIOV_OPERATOR_CONFIG, name, namespace)
    except NotFound:
        log.info("nothing to uninstall", config=f"{namespace}/{name}")
        return
    except ApiError as exc:
        raise click.ClickException(f"cannot delete SriovOperatorConfig {namespace}/{name}: {exc}") from None
    log.info("SriovOperatorConfig deleted; waiting for the operator to finish", config=f"{namespace}/{name}")
    deadline = time.monotonic() + timeout
    finalizers: list[str] = []
    while time.monotonic() < deadline:
        try:
            finalizers = client.get(SRIOV_OPERATOR_CONFIG, name, namespace)["metadata"].get("finalizers") or []
        except NotFound:
            log.info("uninstalled: the operator removed its webhook configurations and finalizer")
            return
        except ApiError as exc:
            log.warning("reading the config failed; retrying", error=str(exc))
        time.sleep(poll_interval)
    raise click.ClickException(
        f"SriovOperatorConfig {namespace}/{name} still exists after {timeout:.0f}s with finalizers {finalizers}: "
        "is the operator running? (without it, remove the finalizer by hand)")
