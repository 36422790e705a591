"""The one exit-code table of every `sriovop` subcommand, so that a script can tell "no" from "cannot
say" whatever it runs. Click's own usage errors (exit 2 by default) are remapped to NO_ANSWER by the
command group, because 2 means "disruptive" to `sriovop plan`."""

from __future__ import annotations

from typing import Final

import click

OK: Final = 0
#: The command ran and the answer is no: `plan`: the API server or an enforcing webhook refuses a
#: policy; `gen --check`: generated files are stale; long-running binaries: a fatal run-time error.
REFUSED: Final = 1
#: `plan` only: every policy is admitted and at least one node drains or reboots.
DISRUPTIVE: Final = 2
#: Nothing was decided: bad usage or flags, a file missing or unusable, the cluster unreachable, a
#: named object not found.
NO_ANSWER: Final = 3

EXIT_MEANINGS: Final = {
    OK: "done (plan: admissible, nothing disruptive)",
    REFUSED: "refused or failed (plan: the API server or an enforcing webhook would refuse a policy)",
    DISRUPTIVE: "plan: admissible, and at least one node would drain or reboot",
    NO_ANSWER: "no answer: bad usage, an unusable file, the cluster unreachable or an object not found",
}

#: For `--help` epilogs (click rewraps text; `\b` keeps the table's lines).
HELP_TABLE: Final = "\b\nExit codes (every sriovop command):\n" + "\n".join(
    f"  {code}  {text}" for code, text in EXIT_MEANINGS.items())


class NoAnswer(click.ClickException):
    """No answer could be given (NO_ANSWER); never read as "refused" or "disruptive"."""

    exit_code = NO_ANSWER
