"""Click options every sriovop binary shares, so their flags and help read the same everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

LOG_LEVELS = ("debug", "info", "warning", "error")

kubeconfig_option = click.option(
    "--kubeconfig", type=click.Path(dir_okay=False), default=None,
    help="Kubeconfig; else $KUBECONFIG, else the in-cluster service account.",
)


def log_options(live: bool = False) -> Callable[[F], F]:
    """--log-level and --log-format; `live` says that SriovOperatorConfig spec.logLevel overrides the level."""
    level_help = "Initial level; SriovOperatorConfig spec.logLevel changes it live." if live else None

    def decorate(func: F) -> F:
        func = click.option("--log-format", type=click.Choice(["json", "console"]), default="json",
                            show_default=True)(func)
        return click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True,
                            help=level_help)(func)

    return decorate
