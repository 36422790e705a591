"""`sriovop dev images`: build the images without a registry and load them into a local cluster's nodes.

Registered under `sriovop dev` (the leading underscore keeps it from being a top-level command). The
builder and loader are imported when a command runs, so `--help` stays cheap.
"""

from __future__ import annotations

from pathlib import Path

import click

TARGETS = ("operator", "webhook", "config-daemon", "pause")


@click.group("images")
def images() -> None:
    """Container images without a registry: build OCI archives, import them into cluster nodes."""


@images.command("build")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the archives go (default: build/images in the source checkout).")
@click.option("--only", "targets", multiple=True, type=click.Choice(TARGETS),
              help="Build only this image (repeatable). Default: all of them.")
def build(out_dir: Path | None, targets: tuple[str, ...]) -> None:
    """Build the operator, webhook, config-daemon and pause images as OCI archives (TARGET.tar).

    Debian root filesystems come from mmdebstrap and the Python layers from wheels; both are cached
    under ${XDG_CACHE_HOME:-~/.cache}/sriovop/images, so only a code change costs a rebuild.
    """
    from sriovop.devcluster.images.build import build_images

    for target, path in build_images(out_dir, targets).items():
        click.echo(f"{target}\t{path}")


@images.command("load")
@click.option("--dir", "cluster_dir", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="The cluster directory given to `sriovop dev cluster up --dir`.")
@click.option("--images", "images_dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=Path("build/images"), show_default=True, help="Directory of *.tar archives to import.")
def load(cluster_dir: Path, images_dir: Path) -> None:
    """Import every archive in --images into the containerd of every node of the cluster in --dir."""
    from sriovop.devcluster.images.build import Progress
    from sriovop.devcluster.images.load import LoadError, archives_in, load_archives

    try:
        loaded = load_archives(cluster_dir, archives_in(images_dir), say=Progress())
    except LoadError as exc:
        raise click.ClickException(str(exc)) from None
    for node, names in loaded.items():
        click.echo(f"{node}\t{' '.join(names)}")
