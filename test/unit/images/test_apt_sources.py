"""The images' Debian sources come from the machine's APT configuration (no host is touched: a temp root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sriovop.devcluster.images.apt_sources import AptSourcesError, debian_sources


def _apt(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "etc" / "apt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_deb822_and_one_line_sources_give_the_suite_and_its_companions(tmp_path: Path) -> None:
    root = _apt(tmp_path, {
        "sources.list.d/debian.sources": (
            "Types: deb deb-src\n# a comment\nURIs: http://mirror.example.invalid/debian\n"
            "Suites: bookworm bookworm-updates\nComponents: main contrib\nSigned-By: /k.gpg\n\n"
            "Types: deb\nURIs: http://mirror.example.invalid/debian\nSuites: bookworm-backports\nComponents: main\n\n"
            "Types: deb\nEnabled: no\nURIs: http://off.example.invalid/debian\nSuites: bookworm\nComponents: main\n"),
        "sources.list": ("# deb http://commented.example.invalid/debian bookworm main\n"
                         "deb [signed-by=/k.gpg] http://sec.example.invalid/debian-security bookworm-security main\n"
                         "deb-src http://src.example.invalid/debian bookworm main\n"
                         "deb http://other.example.invalid/apt cloud-sdk-bookworm main\n"),
    })
    assert debian_sources("bookworm", root) == (
        "deb http://sec.example.invalid/debian-security bookworm-security main",
        "deb http://mirror.example.invalid/debian bookworm main",
        "deb http://mirror.example.invalid/debian bookworm-updates main",
    )


def test_no_source_for_the_suite_is_a_clear_error(tmp_path: Path) -> None:
    root = _apt(tmp_path, {"sources.list": "deb http://mirror.example.invalid/debian trixie main\n"})
    with pytest.raises(AptSourcesError, match="no `deb` source for Debian bookworm"):
        debian_sources("bookworm", root)
