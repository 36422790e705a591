"""Click options every sriovop binary shares, so their flags and help read the same everywhere."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from sriovop.api.v1 import consts

F = TypeVar("F", bound=Callable[..., Any])

LOG_LEVELS = ("debug", "info", "warning", "error")

kubeconfig_option = click.option(
    "--kubeconfig", type=click.Path(dir_okay=False), default=None,
    help="Kubeconfig; else $KUBECONFIG, else the in-cluster service account.",
)

freeze_gc_option = click.option(
    "--freeze-gc/--no-freeze-gc", default=True, show_default=True,
    help="Once the caches have synced, keep them out of Python's full garbage collections "
         "(gc.freeze; docs/scale.md): full collections then pause for the newer objects only.")


def log_options(live: bool = False) -> Callable[[F], F]:
    """--log-level and --log-format; `live` says that SriovOperatorConfig spec.logLevel overrides the level."""
    level_help = "Initial level; SriovOperatorConfig spec.logLevel changes it live." if live else None

    def decorate(func: F) -> F:
        func = click.option("--log-format", type=click.Choice(["json", "console"]), default="json",
                            show_default=True)(func)
        return click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True,
                            help=level_help)(func)

    return decorate


namespace_option = click.option(
    "--namespace", "-n", default=lambda: os.environ.get(consts.ENV_NAMESPACE, consts.DEFAULT_OPERATOR_NAMESPACE),
    show_default="$NAMESPACE or sriov-network-operator", help="The operator namespace.")

output_option = click.option(
    "--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="`json` for scripts: camelCase keys, as the Kubernetes API writes them (docs/cli.md lists them).")

color_option = click.option(
    "--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
    help="Colour the text output: auto colours only a terminal; always also colours a pipe or a file.")


def use_colour(choice: str) -> bool:
    """`--color` decided: `auto` colours when standard output is a terminal (and NO_COLOR is unset)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def echo_text(text: str, colour: bool) -> None:
    """Print rendered text; `color=True` keeps the ANSI codes click would strip from a pipe."""
    click.echo(text, nl=False, color=colour)


def report_options(func: F) -> F:
    """The flags of every command that reads the cluster and reports to people or scripts:
    --kubeconfig, --namespace, --output, --color."""
    for option in (color_option, output_option, namespace_option, kubeconfig_option):
        func = option(func)
    return func
