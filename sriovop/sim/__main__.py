"""`python -m sriovop.sim serve ...` (sim/cli.py)."""

from sriovop.sim.cli import cli

cli()
