"""`sriovop status`: per node, each PF, its VF groups, sync status, drain state and last error."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from sriovop.api.v1 import consts
from sriovop.commands._options import kubeconfig_option

if TYPE_CHECKING:
    from sriovop.runtime.client import Client


@click.command()
@kubeconfig_option
@click.option("--namespace", "-n", default=lambda: os.environ.get(consts.ENV_NAMESPACE,
                                                                 consts.DEFAULT_OPERATOR_NAMESPACE),
              show_default="$NAMESPACE or sriov-network-operator", help="The operator namespace.")
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="`json` for scripts.")
@click.option("--color/--no-color", default=None, help="Colour the text output (default: only on a TTY).")
def command(kubeconfig: str | None, namespace: str, output: str, color: bool | None) -> None:
    """Show every node's SR-IOV state on one screen."""
    from sriovop.runtime.client import Client  # imported here: `sriovop status --help` stays fast
    from sriovop.runtime.config import load_config
    from sriovop.status import collect, render_text

    client = Client(load_config(kubeconfig))
    try:
        report = collect(client, namespace, _model_names(client, namespace))
    finally:
        client.close()
    if output == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    colour = sys.stdout.isatty() if color is None else color
    click.echo(render_text(report, colour=colour), nl=False)


def _model_names(client: Client, namespace: str) -> dict[tuple[str, str], str]:
    from sriovop.runtime.errors import ApiError
    from sriovop.runtime.kinds import CONFIG_MAP
    from sriovop.status import model_names

    try:
        return model_names(client.get(CONFIG_MAP, consts.SUPPORTED_NIC_IDS_CONFIGMAP, namespace).get("data") or {})
    except ApiError:
        return {}
