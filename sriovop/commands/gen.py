"""`sriovop gen`: generate artefacts from the Python API types (the CRDs are never edited by hand)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group("gen")
def command() -> None:
    """Generate files derived from sriovop's API types."""


@command.command("crds")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("manifests/crds"), show_default=True,
              help="Directory to write one CRD YAML file per kind into.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file in --out is missing or stale.")
def crds(out: Path, check: bool) -> None:
    """Write the CustomResourceDefinitions of sriovnetwork.openshift.io/v1 (and the NAD CRD)."""
    from sriovop.api.v1.schema.generate import stale_crds, write_crds

    if check:
        stale = stale_crds(out)
        if stale:
            click.echo(f"stale CRDs in {out}: {', '.join(stale)}; run `sriovop gen crds --out {out}`",
                       err=True)
            sys.exit(1)
        click.echo(f"CRDs in {out} are up to date")
        return
    for path in write_crds(out):
        click.echo(str(path))
