"""The garbage-collector pause histogram (sriovop.runtime.gcpause): real collections of this process,
timed by the hook and exposed through a registry as Prometheus text. No host is touched."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry, generate_latest

from sriovop.runtime.gcpause import GcPauses


def series(registry: CollectorRegistry) -> dict[str, float]:
    out = {}
    for line in generate_latest(registry).decode().splitlines():
        if not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_each_collection_is_counted_in_its_generation_with_its_time() -> None:
    pauses = GcPauses()
    registry = CollectorRegistry()
    registry.register(pauses)
    held = [[i] for i in range(200_000)]  # something for a full collection to walk
    gc.callbacks.append(pauses.callback)
    try:
        gc.collect(0)
        gc.collect()
        gc.collect()
    finally:
        gc.callbacks.remove(pauses.callback)
    got = series(registry)
    assert got['sriovop_gc_pause_seconds_count{generation="2"}'] == 2
    assert got['sriovop_gc_pause_seconds_count{generation="0"}'] >= 1
    assert got['sriovop_gc_pause_seconds_sum{generation="2"}'] > 0
    # cumulative buckets: +Inf holds every collection, and no bucket holds more than the next
    full = [v for k, v in got.items() if k.startswith('sriovop_gc_pause_seconds_bucket{generation="2"')]
    assert full == sorted(full) and full[-1] == 2
    assert len(held) == 200_000
