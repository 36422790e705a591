"""Run a benchmark's child process with only the packages our images install importable.

Why: a benchmark runs our processes from the development virtualenv, which also holds the test and lint
tools. Some runtime libraries import an optional package when it happens to be installed: structlog
imports `rich` (and with it `pygments`) for its console renderer, about 8 MiB of RSS. The images do not
install them (images/requirements.txt, the pinned list `make images` installs), so a deployed operator
never loads them, and a memory figure taken in the virtualenv would count them. Here every top-level
module that belongs to an installed distribution outside that list (and outside sriovop) fails to
import, exactly as it does in the image; the standard library and the image's own packages load as
usual.

    python test/bench/image_packages.py SCRIPT [ARGS...]    # runs SCRIPT as __main__ with ARGS
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import re
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[2] / "images" / "requirements.txt"


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def image_distributions(requirements: Path = REQUIREMENTS) -> frozenset[str]:
    """The distributions the images install: every pinned `name==version` line, and sriovop."""
    names = {"sriovop"}
    for line in requirements.read_text().splitlines():
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==", line)
        if match:
            names.add(normalized(match.group(1)))
    return frozenset(names)


class OutsideImageFinder(importlib.abc.MetaPathFinder):
    """Refuses top-level modules that only distributions outside the image provide."""

    def __init__(self, allowed: frozenset[str]) -> None:
        owners = importlib.metadata.packages_distributions()
        self.refused = frozenset(module for module, dists in owners.items()
                                 if not any(normalized(d) in allowed for d in dists))

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if path is None and fullname in self.refused:
            raise ModuleNotFoundError(f"No module named {fullname!r} (not installed in the images)", name=fullname)
        return None


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: image_packages.py SCRIPT [ARGS...]")
    sys.meta_path.insert(0, OutsideImageFinder(image_distributions()))
    sys.argv = list(argv)
    sys.path[0] = str(Path(argv[0]).resolve().parent)
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
