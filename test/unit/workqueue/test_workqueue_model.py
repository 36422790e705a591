"""Property test: random add/get/done sequences keep client-go's queue invariants.

The reference model is written independently of the implementation, as the guarantees themselves:
an item is queued at most once, never handed out while being processed, repeated adds collapse, and an
add during processing yields exactly one more run after done.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import CollectorRegistry

from sriovop.runtime.workqueue import FakeClock, PrometheusMetricsProvider, Queue

ITEMS = st.sampled_from(["a", "b", "c", "d"])


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.registry = CollectorRegistry()
        self.q: Queue[str] = Queue("model", metrics_provider=PrometheusMetricsProvider(self.registry),
                                   clock=FakeClock(), unfinished_work_update_period=3600)
        self.waiting: list[str] = []       # handed out next, in this order
        self.processing: set[str] = set()
        self.rerun: set[str] = set()       # added while processing: owed one more run
        self.adds = 0

    def teardown(self) -> None:
        self.q.shutdown()

    @rule(item=ITEMS)
    def add(self, item: str) -> None:
        self.q.add(item)
        if item in self.processing:
            if item not in self.rerun:
                self.rerun.add(item)
                self.adds += 1
        elif item not in self.waiting:
            self.waiting.append(item)
            self.adds += 1

    @precondition(lambda self: self.waiting)
    @rule()
    def get(self) -> None:
        item, shutdown = self.q.get()
        assert not shutdown
        assert item == self.waiting.pop(0)
        assert item not in self.processing
        self.processing.add(item)

    @precondition(lambda self: self.processing)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(item)
        self.processing.discard(item)
        if item in self.rerun:
            self.rerun.discard(item)
            self.waiting.append(item)

    @invariant()
    def length_and_metrics_match(self) -> None:
        assert len(self.q) == len(self.waiting)
        labels = {"name": "model", "controller": "model"}
        assert self.registry.get_sample_value("workqueue_adds_total", labels) == self.adds
        depth = self.registry.get_sample_value("workqueue_depth", {**labels, "priority": ""})
        assert depth == len(self.waiting) + len(self.rerun)


QueueMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_queue_model = QueueMachine.TestCase
