"""`sriovop plan`: what applying or deleting SriovNetworkNodePolicies would do, without writing anything.

The planner, the API client and what they pull in (kubernetes, pyroute2, structlog, ...) are imported
inside the functions: `sriovop plan --help` and `sriovop explain --help` would otherwise pay for them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from sriovop.commands._options import echo_text, report_options, use_colour
from sriovop.exitcodes import NoAnswer

if TYPE_CHECKING:
    from sriovop.plan.snapshot import Snapshot

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
        raise NoAnswer(f"cannot read the cluster: {exc}") from None


@click.command()
@click.option("--filename", "-f", "files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False),
              help="A YAML/JSON file of SriovNetworkNodePolicies (several documents or a List allowed); repeatable.")
@click.option("--delete", is_flag=True, help="Plan deleting the policies in the files instead of applying them.")
@report_options
def command(files: tuple[str, ...], delete: bool, kubeconfig: str | None, namespace: str, output: str,
            color: str) -> None:
    """Show what applying (or with --delete, deleting) the policies would do, and change nothing.

    Per node: each PF with VFs before -> after, MTU (and "kept at" when the daemon will not lower it),
    link type, VF groups and resource names, and what the config daemon will do to the host and why;
    PFs a policy matches but another policy wins, and why; whether the node would be drained or
    rebooted (the config daemon's own decision); per pool, how many nodes drain at once under
    maxUnavailable and in how many waves; each resource's allocatable before -> after, and the
    networks and pods that still use a resource about to vanish.

    Admission: with a policy webhook deployed, what it says (a denial stops the change). Without one
    (enableOperatorWebhook: false), the API server stores every policy its schema accepts: what the
    webhook would deny is a warning naming the field, and the nodes are planned with those policies.
    A webhook that cannot be reached is reported with what its failurePolicy then does.

    Unknown fields in a file are errors that name the field and the nearest known one. Reads only:
    nothing in the cluster is changed. `-o json` keys are documented in docs/cli.md.
    """
    from sriovop.jsonstyle import dumps
    from sriovop.plan.compute import compute_plan
    from sriovop.plan.render import render_plan
    from sriovop.plan.snapshot import PlanInputError, load_policies

    try:
        given = load_policies(files, namespace)
    except PlanInputError as exc:
        raise NoAnswer(str(exc)) from None
    snap = read_cluster(kubeconfig, namespace)
    plan = compute_plan(snap, given, delete)
    if output == "json":
        click.echo(dumps(plan))
    else:
        colour = use_colour(color)
        echo_text(render_plan(plan, colour=colour), colour)
    sys.exit(plan["exitCode"])
