"""The README stays a front door and every relative link of it and of docs/ leads somewhere.

Host: none (files of the repository).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Pages written beside this tree (the pod side and the CLI reference); linked before they land.
WRITTEN_ELSEWHERE = {"docs/cli.md", "docs/cni.md", "docs/attach-plugin.md", "docs/device-plugin.md",
                     "docs/networks-vs-upstream.md"}
_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def _prose(page: Path) -> str:
    """The page without code blocks and inline code (regexes there look like links)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text)))
    return out


def test_relative_links_resolve() -> None:
    broken = []
    for page in _pages():
        for target, anchor in _LINK.findall(_prose(page)):
            if re.match(r"[a-z]+://", target):
                continue
            path = (page.parent / target).resolve()
            rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
            if rel in WRITTEN_ELSEWHERE and not path.exists():
                continue
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md" and anchor[1:] not in _anchors(path):
                broken.append(f"{page.name}: {target}{anchor}")
    assert not broken, broken


def test_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for must in ("make demo", "make test", "kubectl apply -k manifests/", "helm install", "sriovop plan",
                 "sriovop explain", ".venv/bin/sriovop"):
        assert must in text, must
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("exec make test")
