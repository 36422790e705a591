"""Write (or compare) the CRD YAML files for every kind in the registry."""

from __future__ import annotations

from pathlib import Path

from sriovop.api.v1.registry import SCHEMAS
from sriovop.api.v1.schema.crd import render_yaml


def rendered_crds() -> dict[str, str]:
    """File name -> YAML text for every CRD we ship."""
    return {ks.file_name: render_yaml(ks) for ks in SCHEMAS}


def write_crds(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered_crds().items():
        path = out / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def stale_crds(out: Path) -> list[str]:
    """Names of files in `out` that are missing or differ from what the types generate."""
    return [name for name, text in rendered_crds().items()
            if not (out / name).is_file() or (out / name).read_text() != text]
