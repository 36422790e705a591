"""`sriovop status`: per node, each PF, its VF groups, sync status, drain state and last error."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sriovop.api.v1 import consts
from sriovop.commands._options import echo_text, report_options, use_colour
from sriovop.exitcodes import NoAnswer

if TYPE_CHECKING:
    from sriovop.runtime.client import Client


@click.command()
@report_options
@click.option("--summary", is_flag=True,
              help="Only the rollout's progress per drain pool (nodes ready, applying, waiting for a drain "
                   "slot, holding one against maxUnavailable, failed, cordoned) and the failed nodes' errors: "
                   "for fleets too large for a screen per node.")
def command(kubeconfig: str | None, namespace: str, output: str, color: str, summary: bool) -> None:
    """Show every node's SR-IOV state on one screen.

    Per node: sync status, drain state, last error, each PF with VFs (host -> spec), MTU and link, its
    VF groups, and a warning for every field where the host does not match the spec, for as long as
    it lasts. Then, per drain pool, how many nodes are ready, applying, waiting for a drain slot,
    holding one (against the pool's maxUnavailable), failed and cordoned.
    """
    from sriovop.jsonstyle import dumps
    from sriovop.runtime.client import Client  # imported here: `sriovop status --help` stays fast
    from sriovop.runtime.config import ConfigError, load_config
    from sriovop.runtime.errors import ApiError
    from sriovop.status import collect, render_summary, render_text

    try:
        client = Client(load_config(kubeconfig))
        try:
            report = collect(client, namespace, _model_names(client, namespace))
        finally:
            client.close()
    except (ApiError, ConfigError, OSError) as exc:
        raise NoAnswer(f"cannot read the cluster: {exc}") from None
    if output == "json":
        click.echo(dumps(report.summary_json() if summary else report.to_json()))
        return
    colour = use_colour(color)
    echo_text((render_summary if summary else render_text)(report, colour=colour), colour)


def _model_names(client: Client, namespace: str) -> dict[tuple[str, str], str]:
    from sriovop.runtime.errors import ApiError
    from sriovop.runtime.kinds import CONFIG_MAP
    from sriovop.status import model_names

    try:
        return model_names(client.get(CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, namespace).get("data") or {})
    except ApiError:
        return {}
