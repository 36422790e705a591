"""Production code never names the simulated host: it gets its kernel access as an argument.

The simulator (sriovop/sim) is chosen by the composition roots only: the CLI commands (--simulated-host),
the demo, the hollow nodes, the development cluster and the tests. This test reads every other module
of sriovop and fails on any mention of the simulator's package, its marker directory or endpoint file,
or the former `sim_info` look-up; the import-linter contract in setup.cfg (`make lint`) forbids the
imports themselves. Host: none (source files only).
"""

from __future__ import annotations

import re
from pathlib import Path

import sriovop
from sriovop.sim.endpoint import SIM_DIR, SIM_ENDPOINT_FILE

PACKAGE = Path(sriovop.__file__).parent
#: Packages that build processes and may choose the simulator.
ALLOWED = ("sim", "commands", "demo", "hollow", "devcluster")
FORBIDDEN = re.compile("|".join([
    r"\bsriovop\.sim(?![A-Za-z0-9_])", r"\bsriovop/sim\b", re.escape(SIM_DIR), r"\bsim_info\b", r"\bsim-info\b",
    r"\bsim_endpoint\b", r"\bSimKernelAccess\b", r"\bSimVfKernel\b", r"\bSimKernelIO\b",
    re.escape(f"{SIM_DIR}/{SIM_ENDPOINT_FILE}"),
]))


def production_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in ALLOWED)


def offences(path: Path) -> list[str]:
    return [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
            for n, line in enumerate(path.read_text().splitlines(), 1) if FORBIDDEN.search(line)]


def test_no_production_module_names_the_simulator() -> None:
    modules = production_modules()
    assert any(p.name == "host.py" and p.parent.name == "host" for p in modules)  # the scan sees production code
    found = [line for path in modules for line in offences(path)]
    assert found == [], "production code names the simulator:\n" + "\n".join(found)


def test_the_check_catches_each_kind_of_mention(tmp_path: Path) -> None:
    """The pattern is not vacuous: every way the old code found the simulator is caught."""
    for text in ("from sriovop.sim.access import SimKernelAccess", "import sriovop.sim", "paths.sim_info()",
                 f"root / {SIM_DIR!r}", "SimVfKernel(root)", "see sriovop/sim/host.py"):
        assert FORBIDDEN.search(text), text
    for text in ("simulated: bool = False", "sriovop.simple", "a simulated host", "kernel.simulated"):
        assert not FORBIDDEN.search(text), text
