"""The `sriovop` command.

Subcommands live one per module in `sriovop.commands`; each module exposes a click object named
`command`. They are found at start-up so that a new binary (operator, config-daemon, webhook, ...)
is added by adding its module, without every subcommand's imports being paid by every invocation.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from sriovop import __version__, commands


class _LazyGroup(click.Group):
    """A group whose subcommands are imported only when listed or invoked."""

    def _names(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for info in pkgutil.iter_modules(commands.__path__):
            if not info.name.startswith("_"):
                found[info.name.replace("_", "-")] = f"{commands.__name__}.{info.name}"
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._names(), *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self._names().get(cmd_name)
        if module is None:
            return super().get_command(ctx, cmd_name)
        cmd = importlib.import_module(module).command
        assert isinstance(cmd, click.Command)
        return cmd


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sriovop")
def main() -> None:
    """sriovop: turn physical NICs into SR-IOV virtual functions that pods can attach.

    Run `sriovop COMMAND --help` for the flags of each command.
    """


if __name__ == "__main__":
    main()
