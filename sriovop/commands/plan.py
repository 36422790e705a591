"""`sriovop plan`: what applying or deleting SriovNetworkNodePolicies would do, without writing anything.

The planner, the API client and what they pull in (kubernetes, pyroute2, structlog, ...) are imported
inside the functions: `sriovop plan --help` and `sriovop explain --help` would otherwise pay for them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from sriovop.api.v1 import consts
from sriovop.commands._options import kubeconfig_option

if TYPE_CHECKING:
    from sriovop.plan.snapshot import Snapshot

namespace_option = click.option(
    "--namespace", "-n", default=lambda: os.environ.get(consts.ENV_NAMESPACE, consts.DEFAULT_OPERATOR_NAMESPACE),
    show_default="$NAMESPACE or sriov-network-operator", help="The operator namespace.")
output_option = click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text",
                             show_default=True, help="`json` for scripts.")


class NoPlan(click.ClickException):
    """No plan could be made; its own exit code, so a script never reads it as "denied" or "disruptive"."""

    exit_code = 3


def read_cluster(kubeconfig: str | None, namespace: str) -> Snapshot:
    from sriovop.plan.snapshot import read_snapshot
    from sriovop.runtime.client import Client
    from sriovop.runtime.config import ConfigError, load_config
    from sriovop.runtime.errors import ApiError

    try:
        client = Client(load_config(kubeconfig))
        try:
            return read_snapshot(client, namespace)
        finally:
            client.close()
    except (ApiError, ConfigError, OSError) as exc:
        raise NoPlan(f"cannot read the cluster: {exc}") from None


@click.command()
@click.option("--filename", "-f", "files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="A YAML/JSON file of SriovNetworkNodePolicies (several documents or a List allowed); repeatable.")
@click.option("--delete", is_flag=True, help="Plan deleting the policies in the files instead of applying them.")
@kubeconfig_option
@namespace_option
@output_option
def command(files: tuple[str, ...], delete: bool, kubeconfig: str | None, namespace: str, output: str) -> None:
    """Show what applying (or with --delete, deleting) the policies would do, and change nothing.

    Per node: each PF with VFs before -> after, MTU, link type, VF groups and resource names; PFs a
    policy matches but another policy wins, and why; whether the node would be drained or rebooted
    (the config daemon's own decision); per pool, how many nodes drain at once under maxUnavailable
    and in how many waves; what the admission webhook would say; the device-plugin resources that
    appear, change or disappear.

    `-o json`: admission.allowed/message/warnings; nodes[] with name, changed, disruption (none, drain,
    reboot), drainScope, and spec.interfaces exactly as the operator would write them; pools[] with
    limit, atOnce and waves. Reads only: nothing in the cluster is changed.

    Exit code: 0 admissible and nothing disruptive, 1 denied, 2 at least one node drains or reboots,
    3 no plan (unusable file, cluster unreachable).
    """
    from sriovop.plan.compute import compute_plan
    from sriovop.plan.render import render_plan
    from sriovop.plan.snapshot import PlanInputError, load_policies

    try:
        given = load_policies(files, namespace)
    except PlanInputError as exc:
        raise NoPlan(str(exc)) from None
    snap = read_cluster(kubeconfig, namespace)
    plan = compute_plan(snap, given, delete)
    if output == "json":
        click.echo(json.dumps(plan, indent=2))
    else:
        click.echo(render_plan(plan), nl=False)
    sys.exit(plan["exitCode"])
