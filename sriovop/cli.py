"""The `sriovop` command.

Subcommands live one per module in `sriovop.commands`; each module exposes a click object named
`command`. They are found at start-up so that a new binary (operator, config-daemon, webhook, ...)
is added by adding its module, without every subcommand's imports being paid by every invocation.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from pathlib import Path
from typing import Any

import click

from sriovop import __version__, commands
from sriovop.exitcodes import HELP_TABLE, NO_ANSWER


class _NoAnswerUsage(click.UsageError):
    """A click usage error that exits with NO_ANSWER (click's own is 2, `plan`'s "disruptive")."""

    exit_code = NO_ANSWER


class _LazyGroup(click.Group):
    """A group whose subcommands are imported only when listed or invoked, and whose usage errors (at
    the group or in a subcommand) exit with `exitcodes.NO_ANSWER`, as the shared table says."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _NoAnswerUsage(exc.format_message(), exc.ctx) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _NoAnswerUsage(exc.format_message(), exc.ctx) from exc

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
        if cmd.epilog is None:
            cmd.epilog = HELP_TABLE
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of `sriovop --help`, from each module's source text rather than by importing
        every subcommand (which costs about a second): the same short help click would print."""
        names = self._names()
        rows = []
        limit = formatter.width - 6 - max(len(n) for n in self.list_commands(ctx))
        for name in self.list_commands(ctx):
            doc = command_docstring(names[name]) if name in names else None
            if doc is not None:
                rows.append((name, click.Command(name, help=doc).get_short_help_str(limit)))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def command_docstring(module: str) -> str | None:
    """The docstring of the function `command` in `module`, read without importing it (None if there is
    none, or the command is hidden or has an explicit short help: the caller then imports it)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "command":
            for decorator in node.decorator_list:
                if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                        and decorator.func.attr in ("command", "group")
                        and any(k.arg in ("hidden", "short_help", "help") for k in decorator.keywords)):
                    return None
            return ast.get_docstring(node)
    return None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=HELP_TABLE)
@click.version_option(__version__, prog_name="sriovop")
def main() -> None:
    """sriovop: turn physical NICs into SR-IOV virtual functions that pods can attach.

    Run `sriovop COMMAND --help` for the flags of each command.
    """


if __name__ == "__main__":
    main()
