"""`sriovop --help` and `sriovop COMMAND --help` start without importing what only running needs.

Why it matters: every container start and every `--help` pays the imports; the structlog, kubernetes
and control-plane imports cost most of a second. These tests assert what is imported (a fact), not how
long it took (a benchmark: test/bench/cli_start.py). No host is touched.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from sriovop import cli

#: What only running a command needs; each costs ten to hundreds of milliseconds to import.
HEAVY = ("structlog", "kubernetes", "urllib3", "prometheus_client", "yaml", "cryptography", "pyroute2", "tenacity",
         "ssl", "sriovop.runtime.client", "sriovop.host", "sriovop.controllers", "sriovop.devcluster.controlplane")


def _imported_after(args: list[str]) -> set[str]:
    code = (
        "import sys, json\n"
        "from sriovop.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_top_level_help_imports_no_subcommand() -> None:
    modules = _imported_after(["--help"])
    assert not {m for m in modules if m.startswith("sriovop.commands.") and m != "sriovop.commands._options"}
    assert not modules & set(HEAVY)


def test_every_command_is_checked_below() -> None:
    """The parametrized list below is every subcommand: a new one is not left out unnoticed."""
    assert set(cli.main.list_commands(click.Context(cli.main))) == set(COMMANDS)


COMMANDS = ["cni-server", "config-daemon", "demo", "dev", "device-plugin", "explain", "gen", "metrics-exporter",
            "operator", "plan",
            "status", "uninstall", "wait-for-config", "webhook"]


@pytest.mark.parametrize("command", COMMANDS)
def test_subcommand_help_imports_nothing_heavy(command: str) -> None:
    assert _imported_after([command, "--help"]) & set(HEAVY) == set()


def test_top_level_help_lists_what_importing_every_command_would() -> None:
    """The command list read from the sources matches the one click builds from the imported commands."""
    eager = click.Group("sriovop", help=cli.main.help, params=list(cli.main.params),
                        context_settings=cli.main.context_settings, epilog=cli.main.epilog)
    ctx = click.Context(cli.main)
    for name in cli.main.list_commands(ctx):
        command = cli.main.get_command(ctx, name)
        assert command is not None
        eager.add_command(command, name)
    lazy_text = CliRunner().invoke(cli.main, ["--help"], prog_name="sriovop").output
    eager_text = CliRunner().invoke(eager, ["--help"], prog_name="sriovop").output
    assert "Commands:" in lazy_text and "webhook" in lazy_text
    assert lazy_text == eager_text


def test_docstring_reader_reads_the_command_function() -> None:
    assert cli.command_docstring("sriovop.commands.status").startswith(
        "Show every node's SR-IOV state on one screen.\n\nPer node:")
    assert cli.command_docstring("sriovop.commands._options") is None
