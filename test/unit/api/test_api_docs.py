"""docs/api-reference.md is what `sriovop gen api-docs` writes, and it covers every field of every kind.

Host: none (pure generation from sriovop/api/v1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from sriovop.api.v1.registry import SCHEMAS
from sriovop.api.v1.schema.apidocs import api_reference
from sriovop.api.v1.schema.crd import root_schema
from sriovop.cli import main

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "api-reference.md"


def test_committed_reference_is_current() -> None:
    assert REFERENCE.read_text() == api_reference(), "stale: run `.venv/bin/sriovop gen api-docs` and commit"


def test_check_flag_fails_on_a_stale_file(tmp_path: Path) -> None:
    out = tmp_path / "api.md"
    out.write_text(api_reference().replace("numVfs", "numVF"))
    stale = CliRunner().invoke(main, ["gen", "api-docs", "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "stale" in stale.output
    assert CliRunner().invoke(main, ["gen", "api-docs", "--out", str(out)]).exit_code == 0
    assert CliRunner().invoke(main, ["gen", "api-docs", "--out", str(out), "--check"]).exit_code == 0


def _fields(path: str, schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(table heading, field name, field schema) for every property at every depth."""
    for name, sub in (schema.get("properties") or {}).items():
        yield path, name, sub
        element, suffix = sub, ""
        while True:
            if element.get("type") == "array":
                element, suffix = element.get("items") or {}, suffix or "[]"
            elif element.get("type") == "object" and "properties" not in element and isinstance(
                    element.get("additionalProperties"), dict):
                element, suffix = element["additionalProperties"], suffix or "{}"
            else:
                break
        yield from _fields(f"{path}.{name}{suffix}", element)


def _table_rows(text: str) -> dict[str, dict[str, str]]:
    """heading -> field -> the row's Default and Validation cells."""
    tables: dict[str, dict[str, str]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("## "):
            kind = line[3:]
        elif line.startswith("#### `"):
            heading = f"{kind}:{line[6:-1]}"
            tables[heading] = {}
        elif heading and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            tables[heading][cells[0].strip("`")] = f"{cells[2]} {cells[3]}"
    return tables


def test_every_field_default_and_rule_is_listed() -> None:
    tables = _table_rows(api_reference())
    checked = 0
    for ks in SCHEMAS:
        if ks.kind.group != "sriovnetwork.openshift.io":
            continue
        root = root_schema(ks)
        for part in ("spec", "status"):
            for heading, name, sub in _fields(part, root["properties"].get(part) or {}):
                row = tables[f"{ks.kind.kind}:{heading}"][name]
                if "default" in sub:
                    assert str(sub["default"]).lower().strip('"') in row.lower(), (heading, name, row)
                for key in ("minimum", "maximum", "maxLength", "minLength"):
                    if key in sub:
                        assert str(sub[key]) in row, (ks.kind.kind, heading, name, key, row)
                for value in sub.get("enum") or ():
                    assert f'"{value}"' in row, (ks.kind.kind, heading, name, value)
                checked += 1
    assert checked > 150
