"""`sriovop explain node NAME` / `sriovop explain policy NAME`: why each PF is (not) selected."""

from __future__ import annotations

import click

from sriovop.commands._options import echo_text, report_options, use_colour
from sriovop.commands.plan import read_cluster
from sriovop.exitcodes import NoAnswer


@click.command()
@click.argument("what", type=click.Choice(["node", "policy"]))
@click.argument("name")
@report_options
def command(what: str, name: str, kubeconfig: str | None, namespace: str, output: str, color: str) -> None:
    """Explain, for every policy and every PF, whether it is selected and why not.

    `node NAME`: every policy against every PF of the node. `policy NAME`: the policy against every PF
    of every node with a config daemon. A reason names the selector field that did not match (vendor,
    deviceID, pfNames, rootDevices, netFilter, nodeSelector), an unsupported NIC model, the policy that
    took the PF (priority, name order), or the externally-managed limit it breaks. Also shows each
    node's sync status, drain/reboot state and last error, and a warning for every field where the
    host does not match the spec (such as an MTU the daemon keeps higher than the spec asks).
    """
    from sriovop.jsonstyle import dumps
    from sriovop.plan.explain import ExplainError, explain
    from sriovop.plan.render import render_explain

    snap = read_cluster(kubeconfig, namespace)
    try:
        report = explain(snap, node=name if what == "node" else None, policy=name if what == "policy" else None)
    except ExplainError as exc:
        raise NoAnswer(str(exc)) from None
    if output == "json":
        click.echo(dumps(report))
    else:
        colour = use_colour(color)
        echo_text(render_explain(report, colour=colour), colour)
