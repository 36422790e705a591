"""A leader-gated writer in its own process, for the paused-process fencing test.

    python -m test.support.leaderelection_child KUBECONFIG NAMESPACE IDENTITY

It campaigns for the Lease "lock"; whenever `may_write()` allows, it patches ConfigMap "writes" with
its write counter. SIGUSR1 makes it SIGSTOP itself at the top of its loop, i.e. right before the fencing
check, which is the worst moment to be paused. It prints one JSON line per step and exits 3 with
"leader election lost" when it stops leading.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from sriovop.logsetup import configure_logging
from sriovop.runtime.client import Client
from sriovop.runtime.config import load_config
from sriovop.runtime.kinds import CONFIG_MAP
from sriovop.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock

FAST = LeaderElectionConfig(lease_duration=3.0, renew_deadline=2.0, retry_period=0.5)


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main() -> int:
    kubeconfig, namespace, identity = sys.argv[1:4]
    configure_logging("info", "console")  # logs to stderr: stdout carries only the JSON step lines
    client = Client(load_config(kubeconfig))
    lost = threading.Event()
    pause = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: pause.set())
    elector = LeaderElector(
        LeaseLock(client, namespace, "lock", identity), FAST,
        on_started_leading=lambda _stop: say(event="leading"),
        on_stopped_leading=lost.set,
    )
    stop = threading.Event()
    threading.Thread(target=elector.run, args=(stop,), daemon=True).start()
    writes = 0
    while not lost.is_set():
        if pause.is_set():
            pause.clear()
            say(event="pausing", writes=writes)
            os.kill(os.getpid(), signal.SIGSTOP)
            say(event="resumed")
        if elector.may_write():
            writes += 1
            client.patch(CONFIG_MAP, "writes", {"data": {identity: str(writes)}}, namespace)
            say(event="write", n=writes)
        elif elector.is_leader():
            say(event="refused")
        time.sleep(0.02)
    say(event="lost", writes=writes)
    print("leader election lost", file=sys.stderr, flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main())
