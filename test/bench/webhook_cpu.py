"""Webhook CPU per admission, in process: what the rules cost, without TLS, HTTP or the API server.

What it measures: at N nodes and P stored policies of a generated cluster (test/bench/clustergen.py,
the same cluster and candidate policies as admission_e2e), the CPU (process time) of one policy
admission as the API server asks for it: the mutating review and then the validating review of a
dry-run create, each through `AdmissionHandler.handle` (review decoding, the rules, the response).
The view is an in-memory snapshot of frozen objects, as an informer cache holds them, so the figure
is the rules' work at that size and nothing else.
Floor, same run, interleaved (floor, ours, floor, ours ... after a warm-up of each): the same reviews
through a handler whose validating rule allows without judging (decoding, routing, metrics, the
response), i.e. what any webhook in this process spends per admission. Figure: median over rounds of
CPU ms per admission (min/max kept). admission_e2e measures the same webhook end to end (with TLS, the
freshness barrier and kube-apiserver); this one is the part the rules decide, at a fraction of the
time, so a change to them can be measured on a busy machine (process time, not wall time).

    .venv/bin/python test/bench/webhook_cpu.py [--nodes 5000] [--policies 200] [--rounds 7] [--quick]
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import benchlib
import clustergen
from benchlib import Figure, Stat

from sriovop.api.v1.supportednics import SupportedNics
from sriovop.webhook.admission import AdmissionRequest, Verdict
from sriovop.webhook.cluster_view import StaticClusterView
from sriovop.webhook.handler import MUTATING_PATH, VALIDATING_PATH, AdmissionHandler
from sriovop.webhook.settings import WebhookSettings

NS = clustergen.NS


def review(obj: dict[str, Any]) -> bytes:
    """The AdmissionReview kube-apiserver sends for a dry-run create of `obj`."""
    group = "sriovnetwork.openshift.io"
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": group, "version": "v1", "kind": "SriovNetworkNodePolicy"},
        "resource": {"group": group, "version": "v1", "resource": "sriovnetworknodepolicies"},
        "operation": "CREATE", "name": obj["metadata"]["name"], "namespace": NS, "object": obj,
        "dryRun": True}}).encode()


class FloorHandler(AdmissionHandler):
    """Everything of the real handler but the judging: the validating rule allows at once."""

    def _validate_custom_resource(self, request: AdmissionRequest) -> Verdict:
        return Verdict.allow()


def measure(nodes: int, policies: int, rounds: int, per_round: int) -> dict[str, Any]:
    cluster = clustergen.Cluster(nodes, policies)
    view = StaticClusterView(list(cluster.nodes()), list(cluster.node_states()), cluster.stored,
                             nics=SupportedNics.from_configmap_data(clustergen.SUPPORTED_NIC_DATA))
    settings = WebhookSettings(namespace=NS)
    reviews = [review(b) for b in cluster.candidates(64)]
    ours, floor = AdmissionHandler(view, settings), FloorHandler(view, settings)
    for body in reviews:  # every candidate is admitted: the expensive outcome, every check runs
        status, answer = ours.handle(VALIDATING_PATH, body)
        if status != 200 or not answer["response"]["allowed"]:
            raise AssertionError(f"a candidate policy was not admitted: {answer}")

    def side(handler: AdmissionHandler) -> float:
        start = time.process_time()
        for i in range(per_round):
            body = reviews[i % len(reviews)]
            handler.handle(MUTATING_PATH, body)
            handler.handle(VALIDATING_PATH, body)
        return (time.process_time() - start) / per_round * 1000

    samples = benchlib.interleave({"floor": lambda: side(floor), "ours": lambda: side(ours)}, rounds)
    return {"nodes": nodes, "policies": policies, "rounds": rounds, "admissions_per_round": per_round,
            "cpu_ms_per_admission": Stat.of(samples["ours"]).scaled(1, 3),
            "floor_cpu_ms_per_admission": Stat.of(samples["floor"]).scaled(1, 3)}


def main() -> None:
    parser = benchlib.arg_parser(__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--policies", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=320)
    args = parser.parse_args()
    started = benchlib.machine()
    nodes, per_round = (50, 32) if args.quick else (args.nodes, args.per_round)
    r = measure(nodes, min(args.policies, 20) if args.quick else args.policies, args.rounds, per_round)
    ours, floor = r["cpu_ms_per_admission"]["median"], r["floor_cpu_ms_per_admission"]["median"]
    figures = [Figure(
        f"webhook_rules_cpu_ms_per_admission_{nodes}_nodes", ours, "ms", baseline=floor,
        baseline_what="the same reviews through the handler with a validating rule that allows at once "
                      "(median of the interleaved rounds)",
        note=f"in process, no TLS/HTTP/barrier; {r['policies']} stored policies; min-max "
             f"{r['cpu_ms_per_admission']['min']}-{r['cpu_ms_per_admission']['max']} ms")]
    benchlib.emit("webhook_cpu", figures, r, args.out, started)


if __name__ == "__main__":
    main()
