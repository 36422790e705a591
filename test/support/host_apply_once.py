"""Run one host apply against a (simulated) root in its own process, the way the daemon would.

    python -m test.support.host_apply_once <root> '<spec interfaces JSON>'

Honours SRIOVOP_CRASH_AT_STEP (sriovop.host.steps.crash_hook_from_env), prints the ApplyResult as JSON,
exits 3 with the ApplyError text on stderr when the apply fails.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from sriovop.host import Applier, ApplyError, Host
from sriovop.host.steps import crash_hook_from_env
from sriovop.logsetup import configure_logging
from sriovop.sim.access import SimKernelAccess
from test.support.host_sim import FAST


def main(argv: list[str]) -> int:
    configure_logging("info", "console")  # logs to stderr; stdout carries the result
    root, spec = argv[0], json.loads(argv[1])
    with Host(root, kernel=SimKernelAccess(root)) as host:
        status = host.init()
        try:
            result = Applier(host, hook=crash_hook_from_env(), options=FAST).apply(spec, status)
        except ApplyError as e:
            sys.stderr.write(f"{e}\n")
            return 3
        print(json.dumps(dataclasses.asdict(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
