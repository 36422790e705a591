"""The sriovop source checkout that `sriovop dev` and `sriovop demo` build from: the one place that finds it.

These commands build Go programs from hack/ and images/cni-shim, image layers from the sources, and
apply manifests/, none of which the wheel ships (a wheel holds the `sriovop` package only). From a
checkout they find it next to the package; from an installed wheel they need to be told where one is,
and say so instead of failing later on a missing file with a path inside site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

#: Names a source checkout explicitly (e.g. for a sriovop installed from a wheel).
ENV_VAR = "SRIOVOP_SOURCE_DIR"
#: What a directory must hold to count as a checkout: the parts these commands read.
_MARKERS = ("setup.cfg", "sriovop/__init__.py", "hack", "manifests", "images")


class NotASourceCheckout(click.ClickException, FileNotFoundError):
    """No source checkout is at hand. A ClickException, so the CLI prints the message (no traceback),
    and a FileNotFoundError, so the callers that already turn a missing source file into their own
    message or fallback keep doing so."""


def is_source_checkout(path: Path) -> bool:
    return all((path / marker).exists() for marker in _MARKERS)


def source_root(start: Path | None = None) -> Path:
    """The checkout: $SRIOVOP_SOURCE_DIR when set, else the nearest directory above `start` (this module)
    that holds the repository's files. Raises NotASourceCheckout saying how to point at one."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if not is_source_checkout(root):
            raise NotASourceCheckout(
                f"{ENV_VAR}={explicit} is not a sriovop source checkout (it needs {', '.join(_MARKERS)})")
        return root
    here = (start or Path(__file__)).resolve()
    for candidate in here.parents:
        if is_source_checkout(candidate):
            return candidate
    raise NotASourceCheckout(
        f"`sriovop dev` and `sriovop demo` need a sriovop source checkout (hack/, manifests/, images/), and "
        f"this sriovop runs from {here.parents[1]}, which is not one: clone the repository and run them "
        f"from its .venv, or set {ENV_VAR} to the checkout's directory")
