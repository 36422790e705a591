"""Where the images' Debian packages come from: the building machine's own APT configuration.

The image build uses the same archive the machine already installs its packages from (a mirror, a
proxy or a snapshot the administrator chose) instead of a host written into the code. Both formats are
read: deb822 `*.sources` files and one-line `sources.list` entries. Only `deb` entries of the wanted
suite and its -updates/-security companions are used, with the `main` component, which is all the
images need.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

_OPTIONS = re.compile(r"\[[^\]]*\]")


class AptSourcesError(RuntimeError):
    """No usable Debian source for the suite was found in the machine's APT configuration."""


def _deb822_stanzas(text: str) -> Iterator[dict[str, str]]:
    stanza: dict[str, str] = {}
    for raw in [*text.splitlines(), ""]:
        line = raw.split("#", 1)[0].rstrip() if not raw.startswith("#") else ""
        if not raw.strip():
            if stanza:
                yield stanza
            stanza = {}
            continue
        if not line or line[0].isspace() or ":" not in line:
            continue
        key, value = line.split(":", 1)
        stanza[key.strip().lower()] = value.strip()


def _entries(root: Path) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(uri, suite, components) of every enabled `deb` entry under `root`/etc/apt."""
    apt = root / "etc" / "apt"
    one_line = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if not path.is_file():
            continue
        for raw in path.read_text().splitlines():
            words = _OPTIONS.sub(" ", raw.split("#", 1)[0]).split()  # `deb [signed-by=…] URI SUITE COMP…`
            if len(words) >= 3 and words[0] == "deb":
                yield words[1], words[2], tuple(words[3:])
    for path in sorted((apt / "sources.list.d").glob("*.sources")):
        for stanza in _deb822_stanzas(path.read_text()):
            if stanza.get("enabled", "yes").lower() == "no" or "deb" not in stanza.get("types", "").split():
                continue
            for uri in stanza.get("uris", "").split():
                for suite in stanza.get("suites", "").split():
                    yield uri, suite, tuple(stanza.get("components", "").split())


def debian_sources(suite: str, root: Path = Path("/"), wanted: Iterable[str] = ("main",)) -> tuple[str, ...]:
    """One-line `deb URI SUITE main` entries for `suite`, `suite`-updates and `suite`-security."""
    suites = (suite, f"{suite}-updates", f"{suite}-security")
    lines: list[str] = []
    for uri, entry_suite, components in _entries(root):
        have = [c for c in wanted if c in components]
        line = f"deb {uri} {entry_suite} {' '.join(have)}"
        if entry_suite in suites and have and line not in lines:
            lines.append(line)
    if not any(line.split()[2] == suite for line in lines):
        raise AptSourcesError(f"no `deb` source for Debian {suite} ({' '.join(wanted)}) in {root / 'etc/apt'}: "
                              "the images are built from the machine's own APT sources")
    return tuple(lines)
