"""The wheel the images install holds every module of the source tree.

`packages = find:` only finds directories with an `__init__.py`: a directory without one works in an
editable install (as a namespace package) and then is missing from the wheel, so the operator image
failed with `No module named 'sriovop.operator'` while every test on the host passed.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parents[3]


def test_every_source_directory_is_a_packaged_package() -> None:
    found = set(find_packages(str(REPO), include=["sriovop", "sriovop.*"]))
    with_code = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "sriovop").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert with_code - found == set(), "directories with Python code but no __init__.py (left out of the wheel)"
