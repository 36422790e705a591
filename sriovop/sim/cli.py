"""`python -m sriovop.sim serve`: a simulated SR-IOV host in its own process, until SIGTERM.

Prints the host's description (root, namespace, socket, PFs) as one JSON line once it is ready, which is
how the demo, the development cluster's proofs and the tests know they can start what drives it.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import threading
from pathlib import Path

import click

from sriovop.sim.host import DEFAULT_CMDLINE, SimHost
from sriovop.sim.models import MODELS
from sriovop.sim.system import BOOT_LOADERS


@click.group()
def cli() -> None:
    """Simulated SR-IOV host."""


@cli.command()
@click.option("--root", required=True, type=click.Path(path_type=Path), help="Directory to build the host in.")
@click.option("--nic", "nics", multiple=True, required=True,
              help=f"NIC model[:ports], repeatable. Models: {', '.join(sorted(MODELS))}.")
@click.option("--cmdline", default=DEFAULT_CMDLINE, show_default=True, help="Contents of /proc/cmdline.")
@click.option("--wipe/--keep-state", default=True,
              help="Remove the whole root first, or keep operator state files (a reboot of a used host).")
@click.option("--boot-loader", type=click.Choice(BOOT_LOADERS), default="bls", show_default=True,
              help="Boot configuration written for a fresh root (BLS entry or GRUB defaults), none, or a "
                   "broken boot loader that ignores its configuration.")
@click.option("--module", "modules", multiple=True, help="Kernel module loaded at boot (e.g. ib_core), repeatable.")
def serve(root: Path, nics: tuple[str, ...], cmdline: str, wipe: bool, boot_loader: str,
          modules: tuple[str, ...]) -> None:
    """Build the host and serve it until SIGTERM/SIGINT (then remove the network namespace)."""
    if wipe and root.exists():
        shutil.rmtree(root)
    try:
        sim = SimHost(root, list(nics), cmdline=cmdline, boot_loader=boot_loader, modules=modules)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--nic") from e
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with sim:
        sys.stdout.write(json.dumps(sim.describe()) + "\n")
        sys.stdout.flush()
        done.wait()
