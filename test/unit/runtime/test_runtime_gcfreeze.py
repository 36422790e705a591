"""The garbage-collector freezer (sriovop.runtime.gcfreeze), in a child interpreter each: freezing is
process-wide, and the test process must keep its own collector untouched. No host is touched."""

from __future__ import annotations

import subprocess
import sys

#: Shared by the children: a cache of frozen JSON objects as an informer holds them, and a check for
#: whether the collector still walks an object (frozen objects are in no generation).
PRELUDE = """
import gc, threading, time, weakref
from sriovop.runtime.gcfreeze import GcFreezer
from sriovop.runtime.objects import freeze

def walked(obj):
    return any(o is obj for o in gc.get_objects())

def wait_for(what, condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)

cache = {f"node-{i}": freeze({"metadata": {"name": f"node-{i}", "labels": {"a": "b"}},
                              "status": {"interfaces": [{"name": "eth0", "vfs": [{"vfID": 0}]}]}})
         for i in range(20_000)}
"""


def run_child(body: str) -> str:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + body], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return proc.stdout.splitlines()[-1]  # after the freezer's log lines


def test_start_freezes_the_synced_cache_and_later_objects_stay_collectable() -> None:
    out = run_child("""
freezer = GcFreezer(ratio=100.0)  # no refreeze in this test
some = cache["node-7"]["status"]["interfaces"]
assert walked(some)
freezer.start()
assert not walked(some), "the cache is still walked by every full collection"
assert freezer.frozen > 3 * 20_000 and gc.get_freeze_count() > 3 * 20_000

class Cyclic:
    pass
later = Cyclic(); later.me = later; gone = weakref.ref(later); del later
gc.collect()
assert gone() is None, "a cycle made after the freeze was not collected"
freezer.stop()
assert gc.get_freeze_count() == 0 and walked(some)
print("ok")
""")
    assert out.strip() == "ok"


def test_a_regrown_old_generation_is_collected_in_full_and_frozen_again() -> None:
    out = run_child("""
class Cyclic:
    pass
early = Cyclic(); early.me = early; gone = weakref.ref(early)
freezer = GcFreezer(ratio=0.25)
freezer.start()
frozen_at_start = freezer.frozen
del early
gc.collect()
assert gone() is not None  # frozen when it was alive: no collection finds it until a refreeze

# The cache replaced by churn: as many new objects again, then a full collection notices.
replaced = {k: freeze({**v, "status": {"interfaces": [{"name": "eth1", "vfs": []}]}}) for k, v in cache.items()}
cache.clear()
new = replaced["node-7"]["status"]["interfaces"]
gc.collect()
wait_for("the regrown old generation was not frozen again", lambda: not walked(new))
wait_for("the refreeze did not collect the cycle frozen at start", lambda: gone() is None)
assert gc.get_freeze_count() > 3 * 20_000
freezer.stop()
print("ok", frozen_at_start > 0)
""")
    assert out.strip() == "ok True"


def test_freeze_after_freezes_once_when_the_last_of_its_parties_arrives() -> None:
    # The operator's two managers each report their caches synced, from their own threads, in either
    # order: the process must freeze once, after the second, and never after the first alone.
    out = run_child("""
from sriovop.runtime import gcfreeze

freezes = []
gcfreeze.freeze_now = lambda: freezes.append(threading.current_thread().name)
arrive = gcfreeze.freeze_after(2)
first = threading.Thread(target=arrive, name="manager-namespaced")
first.start(); first.join()
assert freezes == [], freezes
second = threading.Thread(target=arrive, name="manager-cluster")
second.start(); second.join()
assert freezes == ["manager-cluster"], freezes
print("ok")
""")
    assert out.strip() == "ok"
