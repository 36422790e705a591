"""A controller's metrics land in the registry it was given, also when that registry sits at the address
of one that was freed (tests and the hollow fleet create a registry per daemon, one after another)."""

from __future__ import annotations

import gc
import threading

from prometheus_client import CollectorRegistry

from sriovop.runtime.controller import Controller, Request, Result
from test.support.poll import wait_for

ROUNDS = 20


def reconciles(registry: CollectorRegistry) -> float:
    return registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "unit", "result": "success"}) or 0.0


def one_pass(registry: CollectorRegistry) -> None:
    done = threading.Event()

    def reconcile(req: Request) -> Result | None:
        done.set()
        return None

    ctrl = Controller("unit", reconcile, registry=registry, need_leader_election=False)
    stop = threading.Event()
    thread = threading.Thread(target=ctrl.start, args=(stop,), daemon=True)
    thread.start()
    ctrl.enqueue(Request("ns", "a"))
    wait_for(done.is_set, 30, "the pass")
    # The count is updated after reconcile returns: wait for it, bounded, rather than read it once.
    wait_for(lambda: reconciles(registry) >= 1, 30, "the pass counted in its own registry")
    stop.set()
    thread.join(30)
    assert not thread.is_alive()


def test_each_registry_counts_its_own_controllers_passes_when_addresses_are_reused() -> None:
    addresses = []
    for _ in range(ROUNDS):
        registry = CollectorRegistry()
        addresses.append(id(registry))
        one_pass(registry)
        assert reconciles(registry) == 1
        del registry
        gc.collect()
    # The case this guards: CPython hands a freed registry's memory to the next one.
    assert len(set(addresses)) < ROUNDS, addresses
